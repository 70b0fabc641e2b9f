"""The README's Python example: export an (untrained) torchvision ResNet-18 with torch.onnx.export,
calibrate it on photographs fed from a Python loop, quantize it for onnxruntime, print the result.
Writes resnet18.onnx and resnet18_qfuse/ into the current folder.
  /usr/bin/python3 python/examples/quantize_torchvision.py
Needs Debian's torch, torchvision and scikit-image (bash models/zoo/setup.sh) and the module
(bash python/install.sh). tests/python/example_test.py runs it and checks the README shows this code.
"""
# README example begins
import numpy as np, qfuse, skimage.data, torch, torchvision

net = torchvision.models.resnet18(weights=None).eval()  # untrained: nothing is downloaded
torch.onnx.export(net, torch.randn(1, 3, 224, 224), "resnet18.onnx", opset_version=13,
                  input_names=["input"], output_names=["logits"], dynamic_axes={"input": {0: "batch"}})
mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
def images():  # any Python loop that yields {input name: array} works
    for photo in (skimage.data.astronaut(), skimage.data.coffee(), skimage.data.chelsea()):
        for top in (0, 38, 76):
            crop = (photo[top:top + 224, 100:324] / 255.0 - mean) / std
            yield {"input": crop.transpose(2, 0, 1).astype(np.float32)}
result = qfuse.quantize("resnet18.onnx", images(), target="onnxruntime")
print(result["levels"]["full/onnxruntime"])
