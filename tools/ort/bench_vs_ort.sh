#!/usr/bin/env bash
# Benchmarks the float reference runtime against onnxruntime on the same models, in one
# run, 2 threads each: bash tools/ort/bench_vs_ort.sh [model.onnx ...]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/resnet_small/model.onnx models/mobilenetv2_small/model.onnx)
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run
for m in "${models[@]}"; do
  echo "== $m"
  echo "-- qfuse fp32, graph as given"
  bazel-bin/tools/run --model="$m" --bench --threads=2 --runs="${RUNS:-30}" --fusion=none
  echo "-- qfuse fp32, fused (BN folded, activations fused: comparable to onnxruntime's optimized graph)"
  bazel-bin/tools/run --model="$m" --bench --threads=2 --runs="${RUNS:-30}" --fusion=full --profile
  echo "-- onnxruntime fp32"
  node tools/ort/ort_bench.js "$m" --threads=2 --runs="${RUNS:-30}"
done
