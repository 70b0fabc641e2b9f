#!/usr/bin/env bash
# The test command (README; .ci/run runs exactly this): installs what is missing, runs every
# Bazel test, then the zoo smoke check on models nobody here designed (a few torchvision
# architectures exported by models/zoo/make_zoo.sh --quick, quantized at every fusion level,
# every emitted int8 file run by onnxruntime and compared with qfuse's integer runtime).
# Then the runtime tests once more under QFUSE_MAX_ISA=avx2 and =scalar.
# Ends with one "N passed, N failed" line: Bazel test targets (per cap) plus zoo models.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit 1
# Tests run two at a time on shared cores: OpenMP threads (qfuse's and oneDNN's) that spin
# while waiting would fight each other, so they sleep instead (no effect on results).
export OMP_WAIT_POLICY=PASSIVE
log="$(mktemp)"
bazel test --test_env=OMP_WAIT_POLICY //... 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
rm -f "$log"
echo "bazel: ${passed} passed, ${failed} failed"

# The runtime tests again under lower ISA caps (runtime/cpu_isa.h): the AVX2 paths (what an
# AVX2-only machine runs, oneDNN included) and the portable scalar code.
for cap in avx2 scalar; do
  cap_log="$(mktemp)"
  bazel test --test_env=OMP_WAIT_POLICY --test_env=QFUSE_MAX_ISA="$cap" //tests/runtime/... 2>&1 | tee "$cap_log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  cap_passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$cap_log")
  cap_failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$cap_log")
  rm -f "$cap_log"
  echo "bazel (QFUSE_MAX_ISA=$cap): ${cap_passed} passed, ${cap_failed} failed"
  passed=$((passed + cap_passed))
  failed=$((failed + cap_failed))
done

zoo_log="$(mktemp)"
bash models/zoo/ci_zoo.sh 2>&1 | tee "$zoo_log"
zoo_rc=${PIPESTATUS[0]}
zoo_passed=$(grep -cE '^OK ' "$zoo_log")
zoo_failed=$(grep -cE '^FAIL ' "$zoo_log")
rm -f "$zoo_log"
echo "zoo: ${zoo_passed} passed, ${zoo_failed} failed"
[ "$zoo_rc" -eq 0 ] && [ "$zoo_passed" -gt 0 ] || { [ "$rc" -eq 0 ] && rc=1; }
echo "tests: $((passed + zoo_passed)) passed, $((failed + zoo_failed)) failed"
exit "$rc"
