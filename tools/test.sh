#!/usr/bin/env bash
# The test command (README; .ci/run runs exactly this): installs what is missing, runs every
# Bazel test, then the zoo smoke check on models nobody here designed (a few torchvision
# architectures exported by models/zoo/make_zoo.sh --quick, quantized at every fusion level,
# every emitted int8 file run by onnxruntime and compared with qfuse's integer runtime).
# Then the runtime tests once more under each lower QFUSE_MAX_ISA the CPU has (avx2_vnni, avx512,
# avx2, scalar), and the tests of
# the code that parses untrusted bytes under ASan + UBSan.
# Then the include-layer check of the source tree (tools/check_layers.py).
# Ends with one "N passed, N failed" line: Bazel test targets (per cap), the layer check and
# zoo models.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit 1
echo "setup: $SECONDS s"
# Debian's torch and torchvision: the Python example test (//tests/python:example_test) exports a
# torchvision model, and the zoo check below exports the quick zoo.
bash models/zoo/setup.sh || exit 1
# Tests run two at a time on shared cores: OpenMP threads (qfuse's and oneDNN's) that spin
# while waiting would fight each other, so they sleep instead (no effect on results).
export OMP_WAIT_POLICY=PASSIVE
rc=0
passed=0
failed=0
# bazel_stage LABEL BAZEL_TEST_ARGS...: runs one `bazel test`, prints "LABEL: N passed,
# N failed" and adds its counts (test targets) to the totals.
bazel_stage() {
  local label="$1"
  shift
  local stage_log stage_start=$SECONDS
  stage_log="$(mktemp)"
  bazel test --test_env=OMP_WAIT_POLICY "$@" 2>&1 | tee "$stage_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  local p f
  p=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$stage_log")
  f=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$stage_log")
  rm -f "$stage_log"
  echo "$label: $p passed, $f failed ($((SECONDS - stage_start)) s)"
  passed=$((passed + p))
  failed=$((failed + f))
}

bazel_stage bazel //...

# The runtime tests again under lower ISA caps (runtime/cpu_isa.h): the AVX2 paths (what an
# AVX2-only machine runs, oneDNN included) and the portable scalar code; on a CPU with AVX-512
# VNNI also the AVX-512 paths without VNNI (what a Skylake-SP runs: oneDNN's int8 convolutions
# through the split source, onnxruntime's AVX-512 Softmax and NCHWc block); on a CPU with
# AVX-VNNI also AVX2 with it (what an Alder Lake or later laptop runs: oneDNN's avx2_vnni int8
# convolutions, qfuse's int8 GEMM on AVX-VNNI, its other kernels' AVX2 code). The calibration
# tests too: the mse threshold search has an AVX2 and an SSE4.1 path.
caps=(avx2 scalar)
if grep -qw avx512_vnni /proc/cpuinfo 2>/dev/null; then caps=(avx512 "${caps[@]}"); fi
if grep -qw avx_vnni /proc/cpuinfo 2>/dev/null; then caps=(avx2_vnni "${caps[@]}"); fi
for cap in "${caps[@]}"; do
  bazel_stage "bazel (QFUSE_MAX_ISA=$cap)" --test_env=QFUSE_MAX_ISA="$cap" //tests/runtime/... //tests/calib/...
done

# The code that reads untrusted bytes (model import, data readers, calibration tables, the
# fuzz targets' seed corpora and crash reproducers) under ASan + UBSan in one build
# (--config=sanitize). The whole suite under --config=asan and --config=ubsan takes about
# 20 minutes per config here, beyond CI's budget: it is run before landing
# (docs/reliability.md records the last run).
SANITIZE_SAMPLE=(
  //tests/ir:graph_test //tests/ir:onnx_corpus_roundtrip_test //tests/ir:onnx_import_test
  //tests/base:file_util_test //tests/base:checked_math_test //tests/base:output_dir_test
  //tests/ir:shape_inference_guard_test
  //tests/data:idx_npy_test //tests/data:image_test //tests/calib:calibration_table_test //tests/calib:histogram_test
  //tests/fuzz:npy_fuzzer_replay_test //tests/fuzz:idx_fuzzer_replay_test //tests/fuzz:image_fuzzer_replay_test
  //tests/fuzz:pb_fuzzer_replay_test //tests/fuzz:table_fuzzer_replay_test
)
bazel_stage "bazel (ASan+UBSan sample)" --config=sanitize "${SANITIZE_SAMPLE[@]}"

# The include layers (tools/check_layers.py; docs/architecture.md): one check of the whole tree.
if /usr/bin/python3 tools/check_layers.py; then passed=$((passed + 1)); else failed=$((failed + 1)); rc=1; fi

zoo_log="$(mktemp)"
zoo_start=$SECONDS
bash models/zoo/ci_zoo.sh 2>&1 | tee "$zoo_log"
zoo_rc=${PIPESTATUS[0]}
zoo_passed=$(grep -cE '^OK ' "$zoo_log")
zoo_failed=$(grep -cE '^FAIL ' "$zoo_log")
rm -f "$zoo_log"
echo "zoo: ${zoo_passed} passed, ${zoo_failed} failed ($((SECONDS - zoo_start)) s)"
[ "$zoo_rc" -eq 0 ] && [ "$zoo_passed" -gt 0 ] || { [ "$rc" -eq 0 ] && rc=1; }
echo "tests: $((passed + zoo_passed)) passed, $((failed + zoo_failed)) failed ($SECONDS s in all)"
exit "$rc"
