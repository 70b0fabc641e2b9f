#!/usr/bin/env bash
# Benchmarks qfuse against onnxruntime on the same models, in one run, 2 threads each, and
# prints the ratio table of issue 11's targets, once with no ISA cap, once with
# QFUSE_MAX_ISA=avx2_vnni where the CPU has AVX-VNNI (an Alder Lake-class laptop) and once with
# QFUSE_MAX_ISA=avx2 (onnxruntime has no cap: it always runs at the machine's best ISA):
#   bash tools/ort/bench_vs_ort.sh                # the two samples + zoo ResNet-18 and MobileNetV2 + PaddleOCR's detector
#   RUNS=30 CAPS="none avx2" bash tools/ort/bench_vs_ort.sh
#   ONLY=resnet18_320,mobilenet_v2_320 bash tools/ort/bench_vs_ort.sh   # some of the models below
# Per model: qfuse fp32 fused (level full, oneDNN float kernels), qfuse int8 of level full
# and bn (integer kernels), qfuse int8 of level full with 7-bit weights and uint8 activations
# (--reduce_range --activation_dtype=uint8: oneDNN's exact vpmaddubsw convolutions on AVX2),
# onnxruntime fp32 (graph optimisation 'all') and onnxruntime on the same int8 files (full
# and bn; bn also with its exact u8 x u8 kernels, session.x64quantprecision=1, which differ from
# the default only on x86 without VNNI, where the default saturates with 8-bit weights). Samples: batch 1 and 64; zoo models (224x224, dynamic axes) batch 1 and 16, and at
# 320x320 (issue 11's detector size) batch 1 and 8. Int8 files are written by
# //tools:quantize into out/bench/<name>/ when missing (zoo models: the zoo's own
# calibration set, models/zoo/make_zoo.sh; skipped when the zoo was not made).
# Raw timings go to out/bench/timings.tsv; the table is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh >/dev/null
runs="${RUNS:-20}"
default_caps="none avx2"
grep -qw avx_vnni /proc/cpuinfo 2>/dev/null && default_caps="none avx2_vnni avx2"
caps="${CAPS:-$default_caps}"
bazel build //tools:run //tools:quantize >/dev/null 2>&1 || bazel build //tools:run //tools:quantize
mkdir -p out/bench
tsv=out/bench/timings.tsv
printf 'cap\tmodel\truntime\tbatch\tms\n' >"$tsv"

# name|float model|dims|batches|calibration data (empty: the sample's default)
models=(
  "resnet_small|models/resnet_small/model.onnx||1,64|"
  "mobilenetv2_small|models/mobilenetv2_small/model.onnx||1,64|"
  "resnet18_224|out/zoo/resnet18/opset13.onnx|height=224,width=224|1,16|out/zoo/resnet18/calib.npy"
  "mobilenet_v2_224|out/zoo/mobilenet_v2/opset13.onnx|height=224,width=224|1,16|out/zoo/mobilenet_v2/calib.npy"
  "resnet18_320|out/zoo/resnet18/opset13.onnx|height=320,width=320|1,8|out/zoo/resnet18/calib.npy"
  "mobilenet_v2_320|out/zoo/mobilenet_v2/opset13.onnx|height=320,width=320|1,8|out/zoo/mobilenet_v2/calib.npy"
  # A trained 320x320 detector from elsewhere (models/ocr: fetch_models.sh, make_ocr_data.py).
  "ppocr_det_320|out/ocr/pkg/package/assets/ch_PP-OCRv4_det_infer.onnx|p2o.DynamicDimension.1=320,p2o.DynamicDimension.2=320|1,8|out/ocr/data/det/calib.npy"
)

# Appends "cap model runtime batch ms" rows from a bench log on stdin.
record() {
  awk -v cap="$1" -v model="$2" -v rt="$3" '/^batch/ { gsub(":", "", $2); print cap "\t" model "\t" rt "\t" $2 "\t" $4 }' >>"$tsv"
}

for entry in "${models[@]}"; do
  IFS='|' read -r name model dims batches calib <<<"$entry"
  if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
  if [ ! -f "$model" ]; then
    echo "-- skipping $name: $model not found (bash models/zoo/make_zoo.sh, or models/ocr's fetch_models.sh, makes it)"
    continue
  fi
  for variant in full bn full_rr; do
    out_dir="out/bench/$name"
    args=(--model="$model" --fusion="${variant%_rr}" --analysis_samples=0)
    if [ "$variant" = full_rr ]; then out_dir="out/bench/$name/rr"; args+=(--reduce_range --activation_dtype=uint8); fi
    int8="$out_dir/model_int8_${variant%_rr}.onnx"
    if [ ! -f "$int8" ]; then
      echo "-- writing $int8"
      args+=(--output="$out_dir")
      [ -n "$calib" ] && args+=(--calib_data="$calib" --eval_data="${calib%calib.npy}eval.npy" --calib_samples=64 \
        --eval_samples=16)
      bazel-bin/tools/quantize/quantize "${args[@]}" >/dev/null
    fi
  done
  dims_flag=()
  [ -n "$dims" ] && dims_flag=(--dims="$dims")
  for cap in $caps; do
    env_cap=()
    [ "$cap" != none ] && env_cap=(env QFUSE_MAX_ISA="$cap")
    echo "== $name, ISA cap: $cap"
    common=(--bench --threads=2 --runs="$runs" --batches="$batches" "${dims_flag[@]}")
    "${env_cap[@]}" bazel-bin/tools/run --model="$model" --fusion=full "${common[@]}" | tee /dev/stderr |
      record "$cap" "$name" qfuse_fp32
    for level in full bn; do
      "${env_cap[@]}" bazel-bin/tools/run --model="out/bench/$name/model_int8_$level.onnx" "${common[@]}" |
        tee /dev/stderr | record "$cap" "$name" "qfuse_int8_$level"
    done
    "${env_cap[@]}" bazel-bin/tools/run --model="out/bench/$name/rr/model_int8_full.onnx" "${common[@]}" |
      tee /dev/stderr | record "$cap" "$name" qfuse_int8_full_rr
    if [ "$cap" = none ]; then  # onnxruntime does not depend on the cap: measured once
      node tools/ort/ort_bench.js "$model" --threads=2 --runs="$runs" --batches="$batches" "${dims_flag[@]}" |
        tee /dev/stderr | record "$cap" "$name" ort_fp32
      for level in full bn; do
        node tools/ort/ort_bench.js "out/bench/$name/model_int8_$level.onnx" --threads=2 --runs="$runs" \
          --batches="$batches" "${dims_flag[@]}" | tee /dev/stderr | record "$cap" "$name" "ort_int8_$level"
      done
      node tools/ort/ort_bench.js "out/bench/$name/model_int8_bn.onnx" --threads=2 --runs="$runs" --exact \
        --batches="$batches" "${dims_flag[@]}" | tee /dev/stderr | record "$cap" "$name" ort_int8_bn_exact
    fi
  done
done 2>&1

echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), flags:" \
  "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx_vnni|avx512f|avx512bw|avx512_vnni|amx_int8)$' | tr '\n' ' ')"
/usr/bin/python3 tools/ort/bench_table.py "$tsv"
