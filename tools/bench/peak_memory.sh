#!/usr/bin/env bash
# Peak memory of qfuse against onnxruntime (issue 11: "peak memory no higher than
# onnxruntime's"): each runtime runs each file alone in a fresh process at the model's larger
# bench batch (2 threads, RUNS timed runs, default 3), and the process's peak resident set is
# read from what it prints (qfuse: //tools:run --bench; onnxruntime: tools/ort/ort_bench.js,
# which also prints node's own resident set before the session, subtracted in the last column).
# Files: the float model (qfuse fused at level full) and the int8 files of levels full and bn
# that tools/ort/bench_vs_ort.sh writes into out/bench (run it first).
#   bash tools/bench/peak_memory.sh
#   ONLY=resnet18_224,mobilenet_v2_224 bash tools/bench/peak_memory.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${RUNS:-3}"
bash tools/ort/setup.sh >/dev/null
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run
source tools/bench/int8_bench_files.sh

peak_of() { awk '/^peak resident memory of the process/ { print $7 }'; }
node_of() { awk '/^peak resident memory of the process/ { gsub("\\)", "", $13); print $13 }'; }

echo "Peak resident memory, MiB (one process per cell; onnxruntime's in parentheses: minus node's own)"
echo "| model | batch | file | qfuse | onnxruntime | qfuse / onnxruntime (minus node) |"
echo "|---|---:|---|---:|---:|---:|"
# name file batches [--dims=...]: the int8 files' entry; the float model is measured with it.
measure() {
  local name="$1" int8="$2" batches="$3" batch label file q o node
  shift 3
  batch="${batches##*,}"
  for label in fp32 full bn; do
    case "$label" in
      fp32) file="$(float_model "$name")" ;;
      *) file="out/bench/$name/model_int8_$label.onnx" ;;
    esac
    [ -f "$file" ] || { echo "$file: missing (run bash tools/ort/bench_vs_ort.sh first)" >&2; exit 1; }
    local fusion=()
    [ "$label" = fp32 ] && fusion=(--fusion=full)
    q=$(bazel-bin/tools/run --model="$file" "${fusion[@]}" --bench --threads=2 --runs="$RUNS" --batches="$batch" "$@" |
      peak_of)
    local ort_log
    ort_log=$(node tools/ort/ort_bench.js "$file" --threads=2 --runs="$RUNS" --batches="$batch" "$@")
    o=$(peak_of <<<"$ort_log")
    node=$(node_of <<<"$ort_log")
    awk -v m="$name" -v b="$batch" -v f="$label" -v q="$q" -v o="$o" -v n="$node" \
      'BEGIN { printf "| %s | %s | %s | %.1f | %.1f (%.1f) | %.2f (%.2f) |\n", m, b, f, q, o, o - n, q / o, q / (o - n) }'
  done
}
LEVEL=full for_each_int8_file measure
