#!/usr/bin/env bash
# The test command (README; .ci/run runs exactly this): installs what is missing, runs every
# Bazel test, then the zoo smoke check on models nobody here designed (a few torchvision
# architectures exported by models/zoo/make_zoo.sh --quick, quantized at every fusion level,
# every emitted int8 file run by onnxruntime and compared with qfuse's integer runtime).
# Ends with one "N passed, N failed" line: Bazel test targets plus zoo models.
set -uo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh || exit 1
log="$(mktemp)"
bazel test //... 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log")
rm -f "$log"
echo "bazel: ${passed} passed, ${failed} failed"

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
