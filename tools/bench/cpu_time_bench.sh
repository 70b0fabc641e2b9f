#!/usr/bin/env bash
# CPU time per inference of qfuse's runtime, one thread, for the models of
# tools/ort/bench_vs_ort.sh: a measure that holds on a machine shared with other jobs, where
# wall-clock medians are not (docs/performance.md). Each figure is the difference of the
# process's task-clock (perf stat) between --runs=R2 and --runs=R1, divided by R2 - R1, so
# loading, packing and warm-up cancel out. OMP_WAIT_POLICY=passive keeps OpenMP's idle
# spinning out of the count.
#   bash tools/bench/cpu_time_bench.sh                     # caps none and avx2
#   BEFORE=/tmp/run_old CAPS=avx2 bash tools/bench/cpu_time_bench.sh   # adds an older //tools:run
# Needs the int8 files that tools/ort/bench_vs_ort.sh writes into out/bench/ and Debian's perf.
# Prints a TSV: cap, model, batch, then CPU ms for fp32 (fused), int8 full, int8 bn and int8
# full with 7-bit weights and uint8 activations (rr), and int8 full / bn of $BEFORE if set.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMP_WAIT_POLICY=passive
run=bazel-bin/tools/run
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run

# cpu_ms BIN CAP MODEL BATCH [flags...]
cpu_ms() {
  local bin=$1 cap=$2 model=$3 batch=$4
  shift 4
  local r1=2 r2=8
  [ "$batch" = 1 ] && r1=10 r2=110
  [ "$batch" = 16 ] && r1=1 r2=4
  tc() {
    env ${cap:+QFUSE_MAX_ISA=$cap} perf stat -x, -e task-clock "$bin" --model="$model" --bench --threads=1 \
      --runs="$1" --batches="$batch" "${@:2}" 2>&1 >/dev/null | awk -F, '/task-clock/ {print $1}'
  }
  local a b
  a=$(tc "$r1" "$@")
  b=$(tc "$r2" "$@")
  python3 -c "print('%.3f' % (($b - $a) / ($r2 - $r1)))"
}

printf 'cap\tmodel\tbatch\tfp32\tint8_full\tint8_bn\tint8_full_rr%s\n' "${BEFORE:+	before_int8_full	before_int8_bn}"
for entry in "resnet_small|models/resnet_small/model.onnx||1 64" \
             "mobilenetv2_small|models/mobilenetv2_small/model.onnx||1 64" \
             "resnet18_224|out/zoo/resnet18/opset13.onnx|--dims=height=224,width=224|1 16" \
             "mobilenet_v2_224|out/zoo/mobilenet_v2/opset13.onnx|--dims=height=224,width=224|1 16"; do
  IFS='|' read -r name model dims batches <<<"$entry"
  [ -f "out/bench/$name/model_int8_full.onnx" ] || { echo "-- skipping $name: run tools/ort/bench_vs_ort.sh first"; continue; }
  flags=()
  [ -n "$dims" ] && flags=("$dims")
  for batch in $batches; do
    for cap in ${CAPS:-none avx2}; do
      c=$cap
      [ "$cap" = none ] && c=
      row="$cap	$name	$batch	$(cpu_ms $run "$c" "$model" "$batch" --fusion=full "${flags[@]}")"
      for f in model_int8_full model_int8_bn rr/model_int8_full; do
        row+="	$(cpu_ms $run "$c" "out/bench/$name/$f.onnx" "$batch" "${flags[@]}")"
      done
      if [ -n "${BEFORE:-}" ]; then
        for f in model_int8_full model_int8_bn; do
          row+="	$(cpu_ms "$BEFORE" "$c" "out/bench/$name/$f.onnx" "$batch" "${flags[@]}")"
        done
      fi
      echo "$row"
    done
  done
done
