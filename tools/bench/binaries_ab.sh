#!/usr/bin/env bash
# Times two builds of tools/run against each other on the int8 files that
# tools/ort/bench_vs_ort.sh writes (out/bench/<name>/model_int8_<level>.onnx; run it first),
# interleaved over ROUNDS rounds so that a slow spell of a shared machine hits both alike.
# Prints, per model and batch, the median over rounds of each run's median (ms) and the ratio.
# Keep the old build first, e.g. (from a clean tree):
#   git checkout -q OLD && bazel build //tools:run && cp bazel-bin/tools/run /tmp/run_old
#   git checkout -q main && bazel build //tools:run && cp bazel-bin/tools/run /tmp/run_new
#   ROUNDS=3 RUNS=10 bash tools/bench/binaries_ab.sh /tmp/run_old /tmp/run_new
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
# name|dims|batches, as in bench_vs_ort.sh
models=(
  "resnet_small||1,64"
  "mobilenetv2_small||1,64"
  "resnet18_224|height=224,width=224|1,16"
  "mobilenet_v2_224|height=224,width=224|1,16"
  "resnet18_320|height=320,width=320|1,8"
  "mobilenet_v2_320|height=320,width=320|1,8"
)
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
    for which in old new; do
      binary="$old"
      [ "$which" = new ] && binary="$new"
      "$binary" --model="$file" --bench --threads=2 --runs="$RUNS" --batches="$batches" "${dims_flag[@]}" |
        awk -v m="$name" -v e="$which" '/^batch/ { gsub(":", "", $2); print m, $2, e, $4 }' >>"$log"
    done
  done
done
echo "int8 $LEVEL, ms: median over $ROUNDS rounds of the median of $RUNS runs; CPU flags: $(grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "| model | batch | old | new | old / new |"
echo "|---|---:|---:|---:|---:|"
sort -k1,1 -k2,2n "$log" | awk '
  { key = $1 "|" $2; v[key, $3] = v[key, $3] " " $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (i = 1; i <= n; ++i) {
      split(order[i], kb, "|")
      o = median(v[order[i], "old"]); w = median(v[order[i], "new"])
      printf "| %s | %s | %.3f | %.3f | %.2f |\n", kb[1], kb[2], o, w, o / w
    }
  }'
rm -f "$log"
