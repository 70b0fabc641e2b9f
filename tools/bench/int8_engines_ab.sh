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
# name|dims|batches, as in bench_vs_ort.sh
models=(
  "resnet_small||1,64"
  "mobilenetv2_small||1,64"
  "resnet18_224|height=224,width=224|1,16"
  "mobilenet_v2_224|height=224,width=224|1,16"
  "resnet18_320|height=320,width=320|1,8"
  "mobilenet_v2_320|height=320,width=320|1,8"
)
bazel build //tools:run >/dev/null 2>&1 || bazel build //tools:run
log=$(mktemp)
for ((round = 1; round <= ROUNDS; ++round)); do
  for entry in "${models[@]}"; do
    IFS='|' read -r name dims batches <<<"$entry"
    if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
    file="out/bench/$name/model_int8_$LEVEL.onnx"
    if [ ! -f "$file" ]; then
      echo "$file: missing (run bash tools/ort/bench_vs_ort.sh first)" >&2
      exit 1
    fi
    dims_flag=()
    [ -n "$dims" ] && dims_flag=(--dims="$dims")
    for engine in $ENGINES; do
      IFS=',' read -r -a settings <<<"$engine"
      env QFUSE_INT8_CONV="${settings[0]}" "${settings[@]:1}" bazel-bin/tools/run --model="$file" --bench --threads=2 --runs="$RUNS" \
        --batches="$batches" "${dims_flag[@]}" |
        awk -v m="$name" -v e="$engine" '/^batch/ { gsub(":", "", $2); print m, $2, e, $4 }' >>"$log"
    done
  done
done
echo "int8 $LEVEL, ms: median over $ROUNDS rounds of the median of $RUNS runs; CPU flags: $(grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
printf '| model | batch |'
for engine in $ENGINES; do printf ' %s |' "$engine"; done
printf '\n|---|---:|'
for _ in $ENGINES; do printf -- '---:|'; done
printf '\n'
sort -k1,1 -k2,2n "$log" | awk -v engines="$ENGINES" '
  { key = $1 "|" $2; v[key, $3] = v[key, $3] " " $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    m = split(engines, e, " ")
    for (i = 1; i <= n; ++i) {
      split(order[i], kb, "|")
      printf "| %s | %s |", kb[1], kb[2]
      for (j = 1; j <= m; ++j) printf " %.3f |", median(v[order[i], e[j]])
      printf "\n"
    }
  }'
rm -f "$log"
