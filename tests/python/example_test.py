"""Runs python/examples/quantize_torchvision.py and checks what it wrote: the int8 model exists,
and on 4 samples the example never saw its logits (qfuse.Session, integer kernels) keep a
cosine > 0.99 with the fp32 model's (measured 0.9996; an int8 ResNet-18 that lost its
calibration or its placement lands far below).

Run by tests/python/run_python_test.sh with the example's runfiles path. Needs Debian's torch:
fails with one line naming the setup script when it is missing.
"""
import os
import subprocess
import sys

COSINE_BOUND = 0.99

try:
    import torch  # noqa: F401  (only checked: the example imports it)
    import torchvision  # noqa: F401
except ImportError as e:
    print(f"example_test: {e}: run `bash models/zoo/setup.sh` (Debian's python3-torch, python3-torchvision)")
    sys.exit(1)

import numpy as np
import qfuse


def main():
    example = sys.argv[1]
    folder = os.path.join(os.environ["TEST_TMPDIR"], "example")
    subprocess.run([sys.executable, example, folder], check=True)
    float_path = os.path.join(folder, "resnet18.onnx")
    int8_path = os.path.join(folder, "resnet18_qfuse", "model_int8_full.onnx")
    if not os.path.isfile(int8_path):
        sys.exit(f"example_test: {int8_path} was not written")
    x = np.random.default_rng(1).standard_normal((4, 3, 64, 64), dtype=np.float32)
    ref = qfuse.Session(float_path).run({"input": x})["logits"]
    out = qfuse.Session(int8_path).run({"input": x})["logits"]
    if ref.shape != (4, 1000) or out.shape != ref.shape:
        sys.exit(f"example_test: logits shaped {ref.shape} (fp32) and {out.shape} (int8), expected (4, 1000)")
    cosine = float(np.dot(ref.ravel(), out.ravel()) / (np.linalg.norm(ref) * np.linalg.norm(out)))
    print(f"example_test: int8 vs fp32 logits cosine {cosine:.6f} on 4 unseen samples (bound {COSINE_BOUND})")
    if not cosine > COSINE_BOUND:
        sys.exit(f"example_test: cosine {cosine:.6f} is not above {COSINE_BOUND}")


if __name__ == "__main__":
    main()
