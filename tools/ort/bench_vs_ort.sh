#!/usr/bin/env bash
# Benchmarks qfuse against onnxruntime on the same models, in one run, 2 threads each:
#   bash tools/ort/bench_vs_ort.sh [model.onnx ...]
# For every float model: qfuse fp32 as given and fused; its int8 QDQ model (full fusion
# level, written by //tools:quantize into out/quantize-<name>/ when missing) on qfuse's
# integer kernels (with the per-op profile) and on onnxruntime (full graph optimisation:
# its QDQ -> QLinear* fusion); and onnxruntime fp32. RUNS sets the timed runs (default 30).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/resnet_small/model.onnx models/mobilenetv2_small/model.onnx)
runs="${RUNS:-30}"
bazel build //tools:run //tools:quantize >/dev/null 2>&1 || bazel build //tools:run //tools:quantize
for m in "${models[@]}"; do
  name="$(basename "$(dirname "$m")")"
  out="out/quantize-$name"
  int8="$out/model_int8_full.onnx"
  if [ ! -f "$int8" ]; then
    echo "-- writing $int8"
    bazel-bin/tools/quantize/quantize --model="$m" --fusion=full --analysis_samples=0 --output="$out" >/dev/null
  fi
  echo "== $m"
  echo "-- qfuse fp32, graph as given"
  bazel-bin/tools/run --model="$m" --bench --threads=2 --runs="$runs" --fusion=none
  echo "-- qfuse fp32, fused (BN folded, activations fused: comparable to onnxruntime's optimized graph)"
  bazel-bin/tools/run --model="$m" --bench --threads=2 --runs="$runs" --fusion=full --profile
  echo "-- qfuse int8 ($int8, integer kernels)"
  bazel-bin/tools/run --model="$int8" --bench --threads=2 --runs="$runs" --profile
  echo "-- onnxruntime fp32"
  node tools/ort/ort_bench.js "$m" --threads=2 --runs="$runs"
  echo "-- onnxruntime int8 (same QDQ model)"
  node tools/ort/ort_bench.js "$int8" --threads=2 --runs="$runs"
done
