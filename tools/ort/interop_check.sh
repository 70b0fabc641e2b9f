#!/usr/bin/env bash
# Every int8 model qfuse emits for the sample models, run by onnxruntime and by qfuse's
# integer runtime on the 10,000 Fashion-MNIST test images: same top-1 within 0.1
# points and logits cosine >= 0.999. Quantizes first if the models are missing.
#   bash tools/ort/interop_check.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tools/ort/setup.sh
bazel build //tools:run //tools:quantize >/dev/null 2>&1 || bazel build //tools:run //tools:quantize
data=/usr/share/datasets/fashion-mnist
status=0
for name in ${MODELS:-resnet_small mobilenetv2_small}; do
  out=out/quantize-$name
  if [ ! -f "$out/model_int8_none.onnx" ]; then
    bazel-bin/tools/quantize/quantize --model="models/$name/model.onnx" --output="$out" --analysis_samples=0
  fi
  for level in full bn none; do
    model=$out/model_int8_$level.onnx
    bazel-bin/tools/run --model="$model" --data="$data/t10k-images-idx3-ubyte.gz" \
      --save_outputs="$out/qfuse_logits_$level.f32" >/dev/null
    node tools/ort/interop_check.js "$model" "$data/t10k-images-idx3-ubyte.gz" \
      "$data/t10k-labels-idx1-ubyte.gz" "$out/qfuse_logits_$level.f32" || status=1
  done
done
exit $status
