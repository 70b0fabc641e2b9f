#!/usr/bin/env bash
# Zoo smoke check for CI (tools/test.sh): exports the quick zoo (models/zoo/make_zoo.sh --quick:
# resnet18, mobilenet_v3_small and the runtime-shaped legacy Softmax model at opsets 11 and 13,
# 16 calibration + 16 evaluation samples), quantizes each at full/bn/none with default flags and
# checks every int8 file in onnxruntime against qfuse's integer runtime (run_zoo.py). Prints one
# OK/FAIL line per model; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
zoo=out/zoo-quick
runs=out/zoo-quick-runs
bash models/zoo/make_zoo.sh --quick --out "$zoo" >/dev/null
bash tools/ort/setup.sh
bazel build //tools:quantize //tools:run >/dev/null 2>&1 || bazel build //tools:quantize //tools:run
/usr/bin/python3 models/zoo/run_zoo.py --zoo "$zoo" --out "$runs"
