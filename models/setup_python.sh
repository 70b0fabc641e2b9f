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

bash "$(dirname "$0")/../tools/apt_install.sh" setup_python "${PACKAGES[@]}"
