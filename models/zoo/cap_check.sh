#!/usr/bin/env bash
# Runs every int8 file of a zoo run under an ISA cap and compares its outputs byte for byte with
# the ones the zoo run saved uncapped (which run_zoo.py compares with onnxruntime's): the
# integer kernels' bit-exactness on every lower-ISA path, on the zoo's real models.
#   CAP=avx2_vnni RUN_DIR=out/zoo-s18f bash models/zoo/cap_check.sh
# RUN_DIR: a run_zoo.py --out folder (its qfuse_int8_<level>.f32 hold the first SAMPLES
# evaluation images' outputs, run_zoo.py --samples); ZOO: the zoo (eval.npy per architecture);
# RUN: the tools/run binary (default bazel-bin/tools/run). Prints one line per file that
# differs or fails, then "cap C: N identical, N differ, N failed"; exits 1 unless all identical.
set -uo pipefail
cd "$(dirname "$0")/../.."
CAP="${CAP:-avx2}"
RUN_DIR="${RUN_DIR:?set RUN_DIR to a run_zoo.py --out folder}"
ZOO="${ZOO:-out/zoo}"
RUN="${RUN:-bazel-bin/tools/run}"
SAMPLES="${SAMPLES:-8}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=0 differ=0 failed=0
for dir in "$RUN_DIR"/*/opset*; do
  arch=$(basename "$(dirname "$dir")")
  for level in full bn none; do
    model="$dir/model_int8_$level.onnx" saved="$dir/qfuse_int8_$level.f32"
    [ -f "$model" ] && [ -f "$saved" ] || continue
    if ! QFUSE_MAX_ISA="$CAP" "$RUN" --model="$model" --data="$ZOO/$arch/eval.npy" --data_samples="$SAMPLES" \
      --save_outputs="$work/out.f32" >"$work/log" 2>&1; then
      echo "FAIL $model: $(tail -1 "$work/log")"
      failed=$((failed + 1))
    elif cmp -s "$work/out.f32" "$saved"; then
      same=$((same + 1))
    else
      echo "DIFF $model"
      differ=$((differ + 1))
    fi
  done
done
echo "cap $CAP: $same identical, $differ differ, $failed failed"
[ "$differ" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$same" -gt 0 ]
