#!/usr/bin/env bash
# Speed and accuracy of each deploy target (quantize --target) in onnxruntime, in one run:
#   bash tools/ort/bench_targets.sh            # the two samples + zoo ResNet-18 and MobileNetV2 + PaddleOCR's three
#   RUNS=10 BATCH=64 bash tools/ort/bench_targets.sh
#   ONLY=ppocr_det_320,ppocr_rec bash tools/ort/bench_targets.sh   # some of the models below
# Per model: quantize at fusion level full for qfuse, onnxruntime and tensorrt (the zoo models on
# the zoo's own 64 calibration and 64 evaluation images, models/zoo/make_zoo.sh; skipped when
# missing), then onnxruntime (2 threads, graph optimisation 'all') times the fp32 model and each
# int8 file at batch BATCH (zoo models at 224x224), and tools/ort/integer_ops_check.js counts the
# quantized Conv/Gemm/MatMul that onnxruntime left float. Accuracy is the quantize run's, on
# qfuse's runtime: top-1 on the 10,000 Fashion-MNIST test images for the samples, output SQNR
# against fp32 for the (untrained) zoo models. The table is printed at the end (markdown).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh >/dev/null
runs="${RUNS:-10}"
batch="${BATCH:-64}"
bazel build //tools:quantize >/dev/null 2>&1 || bazel build //tools:quantize
rows="$(mktemp)"
trap 'rm -f "$rows"' EXIT

# name|float model|dims|calibration data (empty: the sample's default)|batch (empty: BATCH)
# PaddleOCR's trained models (models/ocr/fetch_models.sh, make_ocr_data.py; skipped when missing)
# at the sizes of their data: the detector 320x320 (batch 8), the recogniser 48x320, the
# direction classifier 48x192.
ocr=out/ocr/pkg/package/assets
models=(
  "resnet_small|models/resnet_small/model.onnx|||"
  "mobilenetv2_small|models/mobilenetv2_small/model.onnx|||"
  "resnet18_224|out/zoo/resnet18/opset13.onnx|height=224,width=224|out/zoo/resnet18/calib.npy|"
  "mobilenet_v2_224|out/zoo/mobilenet_v2/opset13.onnx|height=224,width=224|out/zoo/mobilenet_v2/calib.npy|"
  "ppocr_det_320|$ocr/ch_PP-OCRv4_det_infer.onnx|p2o.DynamicDimension.1=320,p2o.DynamicDimension.2=320|out/ocr/data/det/calib.npy|8"
  "ppocr_rec|$ocr/ch_PP-OCRv4_rec_infer.onnx|p2o.DynamicDimension.1=320|out/ocr/data/rec/calib.npy|"
  "ppocr_cls|$ocr/ch_ppocr_mobile_v2.0_cls_infer.onnx|p2o.DynamicDimension.1=48,p2o.DynamicDimension.2=192|out/ocr/data/cls/calib.npy|"
)

# median_ms MODEL DIMS BATCH: onnxruntime's median latency.
median_ms() {
  local dims_flag=()
  [ -n "$2" ] && dims_flag=(--dims="$2")
  node tools/ort/ort_bench.js "$1" --threads=2 --runs="$runs" --batches="$3" "${dims_flag[@]}" |
    awk '/^batch/ { print $4 }'
}

for entry in "${models[@]}"; do
  IFS='|' read -r name model dims calib model_batch <<<"$entry"
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  model_batch="${model_batch:-$batch}"
  if [ ! -f "$model" ]; then echo "-- skipping $name: $model not found (bash models/zoo/make_zoo.sh makes it)"; continue; fi
  out="out/bench-targets/$name"
  args=(--model="$model" --fusion=full --target=all --analysis_samples=0 --output="$out")
  [ -n "$calib" ] && args+=(--calib_data="$calib" --eval_data="${calib%calib.npy}eval.npy" --calib_samples=64)
  echo "== $name: quantize"
  bazel-bin/tools/quantize/quantize "${args[@]}" 2>/dev/null | grep -E '^(level|fp32|full)'
  fp32_ms="$(median_ms "$model" "$dims" "$model_batch")"
  for target in qfuse onnxruntime tensorrt; do
    file="$out/model_int8_full.onnx"
    [ "$target" != qfuse ] && file="$out/model_int8_full_$target.onnx"
    ms="$(median_ms "$file" "$dims" "$model_batch")"
    check="$(node tools/ort/integer_ops_check.js "$file" || true)"
    left="$(sed -E 's/.* ([0-9]+) left float.*/\1/' <<<"$check")"
    quantized="$(sed -E 's/.*: ([0-9]+) quantized weighted ops.*/\1/' <<<"$check")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$target" "$fp32_ms" "$ms" "$quantized" "$left" "$model_batch" >>"$rows"
    echo "$name $target: onnxruntime ${ms} ms (fp32 ${fp32_ms} ms), ${left} of ${quantized} quantized weighted ops left float"
  done
done

echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), flags:" \
  "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|amx_int8)$' | tr '\n' ' ')"
echo "onnxruntime $(node -p "require('./tools/ort/node_modules/onnxruntime-node/package.json').version"), 2 threads, median of $runs runs"
/usr/bin/python3 - "$rows" <<'EOF'
import json, sys
print("| model | batch | target | accuracy (qfuse runtime) | onnxruntime fp32 ms | onnxruntime int8 ms | int8 speed-up | quantized ops left float in onnxruntime |")
print("|---|---:|---|---:|---:|---:|---:|---:|")
for line in open(sys.argv[1]):
    name, target, fp32, int8, quantized, left, batch = line.rstrip("\n").split("\t")
    report = json.load(open(f"out/bench-targets/{name}/report.json"))
    level = next(l for l in report["levels"] if l["level"] == "full" and l.get("target", "qfuse") == target)
    m = level["metrics"]
    acc = f"top-1 {m['top1']:.2f}% (fp32 {report['fp32']['top1']:.2f}%)" if m.get("top1") is not None \
        else f"SQNR {m['sqnr_db']:.2f} dB"
    print(f"| {name} | {batch} | {target} | {acc} | {float(fp32):.2f} | {float(int8):.2f} | {float(fp32) / float(int8):.2f}x | {left} of {quantized} |")
EOF
