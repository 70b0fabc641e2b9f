#!/usr/bin/env bash
# Installs the Debian Python packages that models/make_sample_models.py and
# models/make_opset9_model.py need (torch 1.13, onnx 1.12, numpy).
# Non-interactive and idempotent: apt-get update runs only when a package is missing.
# Run the generator scripts with /usr/bin/python3 (Debian's interpreter).
set -euo pipefail

PACKAGES=(
  python3-torch   # training and ONNX export
  python3-onnx    # graph checks, TensorProto test data, Constant post-processing
  python3-numpy   # IDX parsing, reference computations
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup_python: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup_python: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup_python: done"
