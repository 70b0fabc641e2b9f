"""Quantizes a torchvision ResNet-18 with qfuse from Python: export to ONNX (opset 13, dynamic
batch), calibrate on samples yielded by a Python loop, print the result.
  /usr/bin/python3 python/examples/quantize_torchvision.py [FOLDER]
Needs Debian's torch and torchvision (bash models/zoo/setup.sh) and the module (bash
python/install.sh). Writes FOLDER/resnet18.onnx and FOLDER/resnet18_qfuse/ (default: a temp folder).
"""
import os
import sys
import tempfile

import numpy as np
import qfuse
import torch
import torchvision

folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
os.makedirs(folder, exist_ok=True)
model_path = os.path.join(folder, "resnet18.onnx")
torch.manual_seed(0)
net = torchvision.models.resnet18(weights=None).eval()  # untrained: nothing is downloaded
torch.onnx.export(net, torch.randn(1, 3, 64, 64), model_path, opset_version=13, input_names=["input"],
                  output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
rng = np.random.default_rng(0)
samples = ({"input": rng.standard_normal((3, 64, 64), dtype=np.float32)} for _ in range(16))
result = qfuse.quantize(model_path, samples, target="qfuse")  # 12 samples calibrate, 4 evaluate
print({key: value for key, value in result.items() if key not in ("levels", "seconds")})
