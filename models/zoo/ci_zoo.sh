#!/usr/bin/env bash
# Zoo smoke check for CI (tools/test.sh): exports the quick zoo (models/zoo/make_zoo.sh --quick:
# resnet18, mobilenet_v3_small and the runtime-shaped legacy Softmax model at opsets 11 and 13,
# 16 calibration + 16 evaluation samples), quantizes each at full/bn/none with default flags and
# checks every int8 file in onnxruntime against qfuse's integer runtime (run_zoo.py), for every
# deploy target (--target=all: qfuse at full/bn/none, onnxruntime at full/bn/none, tensorrt at
# full); the onnxruntime-target files must run every quantized Conv/Gemm/MatMul as an integer
# kernel in onnxruntime's optimised graph (tools/ort/integer_ops_check.js). The two bundled
# samples get the same integer-kernel check at --target=onnxruntime, and PaddleOCR's three trained
# models their task check (models/ocr/ci_ocr.sh). Prints one OK/FAIL line per model; exits
# non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
zoo=out/zoo-quick
runs=out/zoo-quick-runs
bash models/zoo/make_zoo.sh --quick --out "$zoo" >/dev/null
bash tools/ort/setup.sh
bazel build //tools:quantize //tools:run >/dev/null 2>&1 || bazel build //tools:quantize //tools:run
# The CI bound is the zoo's own bar, cosine >= 0.999 between onnxruntime and qfuse on every
# qfuse- and onnxruntime-target file at every level (tensorrt files only have to run). Both
# runtimes compute the same integer arithmetic there (the integer-head form of quant/
# integer_heads.h at `full`), so the logits are equal bit for bit but for a float Softmax at the
# end; even the random-init MobileNetV3-small, whose int8 output is at ~0 dB SQNR and amplifies
# any difference, measured cosine 1 (max |diff| 0) on 2026-11-25.
rc=0
/usr/bin/python3 models/zoo/run_zoo.py --zoo "$zoo" --out "$runs" --min_cosine 0.999 --targets=all || rc=1
for sample in resnet_small mobilenetv2_small; do
  out="out/ci-samples/$sample"
  bazel-bin/tools/quantize/quantize --model="models/$sample/model.onnx" --target=onnxruntime --fusion=full \
    --calib_samples=256 --eval_samples=1000 --analysis_samples=0 --output="$out" >/dev/null || { echo "FAIL $sample: quantize"; rc=1; continue; }
  node tools/ort/integer_ops_check.js "$out/model_int8_full_onnxruntime.onnx" || rc=1
done
# Trained models from elsewhere: PaddleOCR's detector, recogniser and classifier (models/ocr).
bash models/ocr/ci_ocr.sh || rc=1
exit "$rc"
