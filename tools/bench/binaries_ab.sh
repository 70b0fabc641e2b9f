#!/usr/bin/env bash
# Times two builds of tools/run against each other on the int8 files that
# tools/ort/bench_vs_ort.sh writes (out/bench/<name>/model_int8_<level>.onnx; run it first),
# interleaved over ROUNDS rounds so that a slow spell of a shared machine hits both alike.
# Prints, per model and batch, the median over rounds of each run's median (ms) and old / new.
# Keep the old build first, e.g. (from a clean tree):
#   git checkout -q OLD && bazel build //tools:run && cp bazel-bin/tools/run /tmp/run_old
#   git checkout -q main && bazel build //tools:run && cp bazel-bin/tools/run /tmp/run_new
#   ROUNDS=3 RUNS=10 bash tools/bench/binaries_ab.sh /tmp/run_old /tmp/run_new
# FLOAT=1 times the float models those files came from instead (qfuse fused, --fusion=full).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ne 2 ]; then
  echo "usage: $0 OLD_RUN_BINARY NEW_RUN_BINARY" >&2
  exit 2
fi
old="$1"
new="$2"
ROUNDS="${ROUNDS:-3}"
RUNS="${RUNS:-10}"
LEVEL="${LEVEL:-full}"
source tools/bench/int8_bench_files.sh
log=$(mktemp)
# name file batches [--dims=...]: both builds on one file.
time_builds() {
  local name="$1" file="$2" batches="$3" which binary
  shift 3
  if [ "${FLOAT:-0}" = 1 ]; then
    file=$(float_model "$name")
    set -- "$@" --fusion=full
  fi
  for which in old new; do
    binary="$old"
    [ "$which" = new ] && binary="$new"
    "$binary" --model="$file" --bench --threads=2 --runs="$RUNS" --batches="$batches" "$@" |
      awk -v m="$name" -v e="$which" '/^batch/ { gsub(":", "", $2); print m, $2, e, $4 }' >>"$log"
  done
}
for ((round = 1; round <= ROUNDS; ++round)); do
  for_each_int8_file time_builds
done
RATIO=1 median_table "$log" old new
rm -f "$log"
