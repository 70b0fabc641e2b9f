#!/usr/bin/env bash
# Runs a Python test script with Debian's python3 and the built module (python/qfuse.so in
# the runfiles) importable: run_python_test.sh SCRIPT [ARGS...]. The working directory is
# the runfiles root, so the script's arguments are runfiles paths.
set -euo pipefail
script="$1"
shift
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 "$script" "$@"
