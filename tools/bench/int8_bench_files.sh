# Sourced by the int8 A/B scripts (int8_engines_ab.sh, binaries_ab.sh): the models of
# tools/ort/bench_vs_ort.sh as "name|dims|batches"; for_each_int8_file, which calls
# "$@" NAME FILE BATCHES DIMS_FLAG... for each int8 file of level $LEVEL (ONLY=a,b keeps
# those names), or exits when one is missing; float_model NAME, the float model it came from;
# and median_table, which prints the table.
BENCH_MODELS=(
  "resnet_small||1,64"
  "mobilenetv2_small||1,64"
  "resnet18_224|height=224,width=224|1,16"
  "mobilenet_v2_224|height=224,width=224|1,16"
  "resnet18_320|height=320,width=320|1,8"
  "mobilenet_v2_320|height=320,width=320|1,8"
)

# The float model a BENCH_MODELS name was quantized from (tools/ort/bench_vs_ort.sh's list).
float_model() {
  case "$1" in
    resnet_small | mobilenetv2_small) echo "models/$1/model.onnx" ;;
    resnet18_*) echo "out/zoo/resnet18/opset13.onnx" ;;
    mobilenet_v2_*) echo "out/zoo/mobilenet_v2/opset13.onnx" ;;
    *) echo "float_model: unknown bench model $1" >&2; return 1 ;;
  esac
}

for_each_int8_file() {
  local entry name dims batches file
  for entry in "${BENCH_MODELS[@]}"; do
    IFS='|' read -r name dims batches <<<"$entry"
    if [ -n "${ONLY:-}" ] && [[ ",$ONLY," != *",$name,"* ]]; then continue; fi
    file="out/bench/$name/model_int8_${LEVEL:-full}.onnx"
    if [ ! -f "$file" ]; then
      echo "$file: missing (run bash tools/ort/bench_vs_ort.sh first)" >&2
      exit 1
    fi
    if [ -n "$dims" ]; then
      "$@" "$name" "$file" "$batches" --dims="$dims"
    else
      "$@" "$name" "$file" "$batches"
    fi
  done
}

# median_table LOG COLUMN...: LOG holds "model batch column ms" lines; prints a markdown row
# per model and batch with the median ms of each column and, with RATIO=1, first / last.
median_table() {
  local log="$1" column
  shift
  local what="int8 ${LEVEL:-full}"
  [ "${FLOAT:-0}" = 1 ] && what="float (qfuse fused, level full)"
  echo "$what, ms: median over $ROUNDS rounds of the median of $RUNS runs; CPU flags: $(grep -o -w 'avx2\|avx512f\|avx512_vnni\|amx_int8' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  printf '| model | batch |'
  for column in "$@"; do printf ' %s |' "$column"; done
  [ "${RATIO:-0}" = 1 ] && printf ' %s / %s |' "$1" "${!#}"
  printf '\n|---|---:|'
  for column in "$@"; do printf -- '---:|'; done
  [ "${RATIO:-0}" = 1 ] && printf -- '---:|'
  printf '\n'
  sort -k1,1 -k2,2n "$log" | awk -v columns="$*" -v ratio="${RATIO:-0}" '
    { key = $1 "|" $2; v[key, $3] = v[key, $3] " " $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    function median(s,   a, k, i, j, t) {
      k = split(s, a, " ")
      for (i = 1; i <= k; ++i) for (j = i + 1; j <= k; ++j) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
      m = split(columns, c, " ")
      for (i = 1; i <= n; ++i) {
        split(order[i], kb, "|")
        printf "| %s | %s |", kb[1], kb[2]
        for (j = 1; j <= m; ++j) printf " %.3f |", median(v[order[i], c[j]])
        if (ratio == 1) printf " %.2f |", median(v[order[i], c[1]]) / median(v[order[i], c[m]])
        printf "\n"
      }
    }'
}
