#!/usr/bin/env bash
# Times the integer Conv engines against each other on the int8 files that
# tools/ort/bench_vs_ort.sh writes (out/bench/<name>/model_int8_<level>.onnx; run it first):
# QFUSE_INT8_CONV=tiles (qfuse's channels-last kernels only), auto (the default choice per
# unit) and onednn (oneDNN wherever it is exact, directly or through the split source),
# interleaved over ROUNDS rounds so that a slow spell of a shared machine hits every engine
# alike. Prints, per model and batch, the median over rounds of each run's median (ms).
#   bash tools/bench/int8_engines_ab.sh
#   ROUNDS=5 RUNS=10 LEVEL=bn ONLY=resnet18_320 bash tools/bench/int8_engines_ab.sh
# An entry of ENGINES may carry environment settings after commas, e.g.
#   ENGINES="auto auto,QFUSE_POINTWISE_BAND_KB=0" (pointwise bands on and off).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${ROUNDS:-3}"
RUNS="${RUNS:-10}"
LEVEL="${LEVEL:-full}"
ENGINES="${ENGINES:-tiles auto onednn}"
source tools/bench/int8_bench_files.sh
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run
log=$(mktemp)
# name file batches [--dims=...]: every engine on one file.
time_engines() {
  local name="$1" file="$2" batches="$3" engine
  shift 3
  for engine in $ENGINES; do
    IFS=',' read -r -a settings <<<"$engine"
    env QFUSE_INT8_CONV="${settings[0]}" "${settings[@]:1}" bazel-bin/tools/run --model="$file" --bench --threads=2 \
      --runs="$RUNS" --batches="$batches" "$@" |
      awk -v m="$name" -v e="$engine" '/^batch/ { gsub(":", "", $2); print m, $2, e, $4 }' >>"$log"
  done
}
for ((round = 1; round <= ROUNDS; ++round)); do
  for_each_int8_file time_engines
done
# shellcheck disable=SC2086  # one column per engine
median_table "$log" $ENGINES
rm -f "$log"
