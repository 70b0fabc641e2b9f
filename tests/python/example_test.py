"""Runs python/examples/quantize_torchvision.py (the README's Python example) in a fresh folder
and checks: the README shows exactly that code; the int8 model exists; on 4 images the example
never saw its logits (qfuse.Session, integer kernels) keep a cosine above COSINE_BOUND with the
fp32 model's (an int8 ResNet-18 that lost its calibration or its placement lands far below).

Run by tests/python/run_python_test.sh with the example's and the README's runfiles paths.
Needs Debian's torch: fails with one line naming the setup script when it is missing.
"""
import os
import subprocess
import sys

COSINE_BOUND = 0.99
MARKER = "# README example begins\n"

try:
    import skimage.data
    import torch  # noqa: F401  (only checked: the example imports it)
    import torchvision  # noqa: F401
except ImportError as e:
    print(f"example_test: {e}: run `bash models/zoo/setup.sh` (Debian's python3-torch, -torchvision, -skimage)")
    sys.exit(1)

import numpy as np
import qfuse


def readme_example(readme):
    """The code of the README's first ```python block."""
    text = open(readme).read()
    start = text.index("```python\n") + len("```python\n")
    return text[start:text.index("```", start)]


def main():
    example, readme = os.path.abspath(sys.argv[1]), sys.argv[2]
    code = open(example).read()
    if MARKER not in code or code.split(MARKER, 1)[1] != readme_example(readme):
        sys.exit(f"example_test: the README's python block is not the code of {example} after its marker")
    folder = os.path.join(os.environ["TEST_TMPDIR"], "example")
    os.makedirs(folder, exist_ok=True)
    subprocess.run([sys.executable, example], cwd=folder, check=True)
    float_path = os.path.join(folder, "resnet18.onnx")
    int8_path = os.path.join(folder, "resnet18_qfuse", "model_int8_full_onnxruntime.onnx")
    if not os.path.isfile(int8_path):
        sys.exit(f"example_test: {int8_path} was not written")
    photo = skimage.data.rocket()  # not among the example's calibration photographs
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    x = np.stack([((photo[t:t + 224, l:l + 224] / 255.0 - mean) / std).transpose(2, 0, 1)
                  for t, l in ((0, 0), (100, 200), (200, 400), (203, 416))]).astype(np.float32)
    ref = qfuse.Session(float_path).run({"input": x})["logits"]
    out = qfuse.Session(int8_path).run({"input": x})["logits"]
    if ref.shape != (4, 1000) or out.shape != ref.shape:
        sys.exit(f"example_test: logits shaped {ref.shape} (fp32) and {out.shape} (int8), expected (4, 1000)")
    cosine = float(np.dot(ref.ravel(), out.ravel()) / (np.linalg.norm(ref) * np.linalg.norm(out)))
    print(f"example_test: int8 vs fp32 logits cosine {cosine:.6f} on 4 unseen images (bound {COSINE_BOUND})")
    if not cosine > COSINE_BOUND:
        sys.exit(f"example_test: cosine {cosine:.6f} is not above {COSINE_BOUND}")


if __name__ == "__main__":
    main()
