#!/usr/bin/env bash
# Builds the model zoo into out/zoo (git-ignored): installs packages, exports the
# architectures, trains the two Fashion-MNIST models and runs the PyTorch FX peer.
#   bash models/zoo/make_zoo.sh [--quick] [--out DIR]
# --quick: resnet18, mobilenet_v3_small and legacy_softmax only, opsets 11 and 13,
# 16 calib + 16 eval samples at 64x64, no training, no normalisation sweep (CI).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
quick=0
out="$root/out/zoo"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out="$2"; shift ;;
    *) echo "usage: make_zoo.sh [--quick] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
export PYTHONWARNINGS=ignore  # torch.onnx / FX warnings are expected; results go to *.json
start=$(date +%s)
stage() { echo "== $1 ($(( $(date +%s) - start )) s)"; }

stage setup
bash "$here/setup.sh"
mkdir -p "$out"
if [ "$quick" = 1 ]; then
  stage export_zoo
  $PY "$here/export_zoo.py" --out "$out" --quick
else
  stage export_zoo
  $PY "$here/export_zoo.py" --out "$out"
  stage train_fashion
  $PY "$here/train_fashion.py" --out "$out"
fi
stage fx_peer
$PY "$here/fx_peer.py" --zoo "$out" --all
stage done
echo "make_zoo: $out in $(( $(date +%s) - start )) s"
