#!/usr/bin/env bash
# Speed of every zoo architecture (opset 13, 128x128, the CRNN 32x128, ViT-tiny 64x64), qfuse
# against onnxruntime on the same files: the float model (qfuse fused at level full) and the
# int8 files of levels full and bn that models/zoo/run_zoo.py wrote into RUN_DIR. 2 threads,
# batch 1 and 8, medians of RUNS runs (default 10). Prints a TSV of the times and a markdown
# table of the ratios.
#   /usr/bin/python3 models/zoo/run_zoo.py --zoo out/zoo --out out/zoo-run --samples 8 --other_samples 8
#   RUN_DIR=out/zoo-run bash tools/bench/zoo_speed.sh
#   ONLY=efficientnet_b0,densenet121 RUN_DIR=out/zoo-run bash tools/bench/zoo_speed.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN_DIR="${RUN_DIR:?set RUN_DIR to a run_zoo.py --out folder}"
ZOO="${ZOO:-out/zoo}"
RUNS="${RUNS:-10}"
tsv="${TSV:-$RUN_DIR/speed.tsv}"
bash tools/ort/setup.sh >/dev/null
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run
printf 'model\truntime\tbatch\tms\n' >"$tsv"
record() { awk -v n="$1" -v r="$2" '/^batch/ { gsub(":", "", $2); print n "\t" r "\t" $2 "\t" $4 }' >>"$tsv"; }
for dir in "$RUN_DIR"/*/opset13; do
  name=$(basename "$(dirname "$dir")")
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  [ -f "$dir/model_int8_full.onnx" ] || continue
  case "$name" in
    crnn) dims=(--dims=width=128) ;;
    vit_tiny) dims=() ;;
    *) dims=(--dims=height=128,width=128) ;;
  esac
  common=(--threads=2 --runs="$RUNS" --batches=1,8 "${dims[@]}")
  echo "== $name" >&2
  bazel-bin/tools/run --model="$ZOO/$name/opset13.onnx" --fusion=full --bench "${common[@]}" | record "$name" qfuse_fp32
  node tools/ort/ort_bench.js "$ZOO/$name/opset13.onnx" "${common[@]}" | record "$name" ort_fp32
  for level in full bn; do
    bazel-bin/tools/run --model="$dir/model_int8_$level.onnx" --bench "${common[@]}" | record "$name" "qfuse_$level"
    node tools/ort/ort_bench.js "$dir/model_int8_$level.onnx" "${common[@]}" | record "$name" "ort_$level"
  done
done
cat "$tsv"
/usr/bin/python3 - "$tsv" <<'EOF'
import collections, sys
t = collections.defaultdict(dict)
for line in list(open(sys.argv[1]))[1:]:
    model, runtime, batch, ms = line.split()
    t[(model, int(batch))][runtime] = float(ms)
print("| model | batch | qfuse fp32 | ORT fp32 | fp32 / ORT | qfuse int8 full | int8 speed-up | ORT int8 full | "
      "qfuse int8 bn | ORT int8 bn | ORT bn / qfuse bn |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (model, batch), v in sorted(t.items()):
    g = lambda k: v.get(k, float("nan"))
    print(f"| {model} | {batch} | {g('qfuse_fp32'):.2f} | {g('ort_fp32'):.2f} | {g('qfuse_fp32') / g('ort_fp32'):.2f} | "
          f"{g('qfuse_full'):.2f} | {g('qfuse_fp32') / g('qfuse_full'):.2f} | {g('ort_full'):.2f} | "
          f"{g('qfuse_bn'):.2f} | {g('ort_bn'):.2f} | {g('ort_bn') / g('qfuse_bn'):.2f} |")
EOF
