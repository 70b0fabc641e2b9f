#!/usr/bin/env bash
# Installs every Debian package that building, testing and running qfuse needs.
# Non-interactive and idempotent: apt-get update runs only when a package is missing.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap        # Bazel 4.2.3, the build system
  g++                    # C++17 compiler
  libonnx-dev            # ONNX protos, checker, shape inference
  libprotobuf-dev        # protobuf runtime that libonnx was built against
  protobuf-compiler
  libeigen3-dev          # GEMM and tensor math in the float runtime
  libabsl-dev            # Status/StatusOr, strings, flags
  libgtest-dev           # unit tests
  libgmock-dev
  libbenchmark-dev       # micro-benchmarks
  libonnx-testdata       # ONNX's own node conformance cases
  dataset-fashion-mnist  # sample dataset for the bundled models
  zlib1g-dev             # gzip IDX reading
  libpng-dev             # PNG decoding for image calibration data
  libjpeg62-turbo-dev    # JPEG decoding for image calibration data
  nlohmann-json3-dev     # JSON calibration tables and reports
  libdnnl-dev            # oneDNN 2.6: the float convolutions (runtime/onednn)
  pybind11-dev           # the Python module qfuse (python/): header-only bindings
  python3-dev            # Python.h of Debian's python3 for the module
  python3-numpy          # arrays in and out of the Python module, its tests
)

bash "$(dirname "$0")/apt_install.sh" setup "${PACKAGES[@]}"
