#!/usr/bin/env bash
# Installs the Debian packages the model-zoo scripts need. Idempotent and
# non-interactive: apt-get update runs only when a package is missing.
# Run the zoo scripts with /usr/bin/python3 (Debian's interpreter).
set -euo pipefail

PACKAGES=(
  python3-torch          # models, BN statistics, training, ONNX export, FX quantization
  python3-torchvision    # the architectures (weights=None; nothing is downloaded)
  python3-onnx           # onnx.checker and shape inference
  python3-numpy          # .npy data files
  python3-pil            # decoding the source photographs
  python3-skimage        # ships real photographs in skimage/data/ (astronaut, coffee, chelsea, ...)
  python3-sklearn        # ships sklearn/datasets/images/{china,flower}.jpg
  dataset-fashion-mnist  # /usr/share/datasets/fashion-mnist/ for train_fashion.py
)

bash "$(dirname "$0")/../../tools/apt_install.sh" zoo "${PACKAGES[@]}"
