#!/usr/bin/env bash
# Installs onnxruntime-node (CPU library ships inside the package) into tools/ort/node_modules.
# --ignore-scripts: the package's install script tries to download a GPU add-on.
set -euo pipefail
cd "$(dirname "$0")"
if [ -f node_modules/onnxruntime-node/package.json ]; then exit 0; fi
command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
npm install --ignore-scripts --no-audit --no-fund --loglevel=error
