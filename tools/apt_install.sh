#!/usr/bin/env bash
# Installs the given Debian packages that are missing: non-interactive, idempotent,
# and `apt-get update` runs only when something is missing.
#   bash tools/apt_install.sh LABEL package...
set -euo pipefail
label="$1"
shift
missing=()
for pkg in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$label: all $# packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "$label: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "$label: done"
