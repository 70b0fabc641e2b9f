#!/usr/bin/env bash
# Builds qfuse's fuzz targets with clang-14 + libFuzzer (ASan and UBSan on) and runs each
# for SECONDS (default 60), starting from the committed seed corpus.
#
#   bash tools/fuzz.sh [SECONDS] [TARGET...]     # targets: model npy idx image pb table
#
# The build uses its own Bazel output base (QFUSE_FUZZ_OUTPUT_BASE, default
# ~/.cache/qfuse-fuzz-bazel), so the normal gcc build is untouched. Corpora grow in
# out/fuzz/<target>/corpus; a crash, leak, sanitizer report or failed invariant is written
# to out/fuzz/<target>/ and makes the script exit non-zero. The last line per target is
# "fuzz <target>: <executions> executions, <edges> edges, <features> features, <status>";
# docs/reliability.md records a run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(model npy idx image pb table); fi

bash tools/apt_install.sh fuzz clang-14 libfuzzer-14-dev libomp-14-dev >/dev/null
output_base="${QFUSE_FUZZ_OUTPUT_BASE:-$HOME/.cache/qfuse-fuzz-bazel}"
bazel --output_base="$output_base" build --config=fuzz //tests/fuzz:all_fuzzers
bin="$(bazel --output_base="$output_base" info --config=fuzz bazel-bin 2>/dev/null)/tests/fuzz"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export OMP_NUM_THREADS=1
failed=0
for target in "${targets[@]}"; do
  dir="out/fuzz/$target"
  mkdir -p "$dir/corpus"
  cp -n "tests/fuzz/corpus/$target/"* "$dir/corpus/" 2>/dev/null || true
  log="$dir/fuzz.log"
  status=ok
  if ! "$bin/${target}_fuzzer" "$dir/corpus" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 \
      -malloc_limit_mb=2048 -artifact_prefix="$dir/" -print_final_stats=1 -close_fd_mask=1 >"$log" 2>&1; then
    status="FINDING (see $log and $dir/crash-* / leak-* / timeout-* / oom-*)"
    failed=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
  echo "fuzz $target: ${execs:-0} executions, ${cov:-0} edges, ${ft:-0} features, $status"
done
exit $failed
