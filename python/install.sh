#!/usr/bin/env bash
# Builds the Python module qfuse (//python:qfuse.so, optimised: -c opt comes from .bazelrc)
# and installs it for Debian's /usr/bin/python3 (its site folder, e.g.
# /usr/local/lib/python3.11/dist-packages/qfuse.so), and also for the `python3` first on PATH
# when that is another interpreter of the same Python version (a pyenv build, say; NumPy,
# which arrays need, may be installed only for Debian's). Then checks `import qfuse` with each.
# Non-interactive and idempotent; a failure prints one line "python/install.sh: ..." and exits 1.
#   bash python/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "python/install.sh: $*" >&2
  exit 1
}

DEBIAN_PYTHON=/usr/bin/python3
SITE_DIR_CODE='import sysconfig; print(sysconfig.get_paths()["platlib"])'
VERSION_CODE='import sys; print("%d.%d" % sys.version_info[:2])'

bash tools/setup.sh || die "tools/setup.sh failed"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
bazel build //python:qfuse.so >"$log" 2>&1 || die "bazel build //python:qfuse.so failed: $(grep -m1 -E 'ERROR|error:' "$log" || tail -n1 "$log")"
module="$(bazel info bazel-bin 2>/dev/null)/python/qfuse.so"
[ -f "$module" ] || die "$module: not built"

# install_for PYTHON: copies the module into PYTHON's site folder (atomically) and imports it.
install_for() {
  local python="$1" site
  site="$("$python" -c "$SITE_DIR_CODE")" || die "$python: cannot find its site folder"
  mkdir -p "$site" || die "$site: cannot create"
  cp "$module" "$site/.qfuse.so.tmp-$$" && chmod 644 "$site/.qfuse.so.tmp-$$" &&
    mv -f "$site/.qfuse.so.tmp-$$" "$site/qfuse.so" || die "$site/qfuse.so: cannot write"
  (cd / && "$python" -c 'import qfuse') || die "$python: import qfuse fails after installing $site/qfuse.so"
  echo "installed $site/qfuse.so for $python"
}

[ -x "$DEBIAN_PYTHON" ] || die "$DEBIAN_PYTHON: missing (tools/setup.sh installs python3-dev)"
install_for "$DEBIAN_PYTHON"

# The python3 on PATH, when it is a different interpreter of the same version.
path_python="$(command -v python3 || true)"
if [ -n "$path_python" ]; then
  debian_exe="$("$DEBIAN_PYTHON" -c 'import os, sys; print(os.path.realpath(sys.executable))')"
  path_exe="$("$path_python" -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null || true)"
  if [ -n "$path_exe" ] && [ "$path_exe" != "$debian_exe" ]; then
    debian_version="$("$DEBIAN_PYTHON" -c "$VERSION_CODE")"
    path_version="$("$path_python" -c "$VERSION_CODE")"
    if [ "$path_version" = "$debian_version" ]; then
      install_for "$path_exe"
    else
      echo "not installed for $path_exe: Python $path_version, the module is built for $debian_version"
    fi
  fi
fi
