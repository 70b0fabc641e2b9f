"""How far a zoo model's evaluation images drive it beyond its calibration images.

For --arch, runs calib.npy and eval.npy through the PyTorch model (weights.pt) and prints,
for each set, the largest value entering the first nn.Linear (the classifier's input, i.e.
the pooled features) and the standard deviation of the output. docs/zoo.md cites these to
explain SQNR figures that measure extrapolation more than rounding.

  /usr/bin/python3 models/zoo/activation_ranges.py --zoo out/zoo --arch densenet121
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archs  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default="out/zoo")
    ap.add_argument("--arch", required=True)
    a = ap.parse_args()
    d = os.path.join(a.zoo, a.arch)
    model = archs.build(a.arch)
    model.load_state_dict(torch.load(os.path.join(d, "weights.pt")))
    model.eval()
    linear = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    seen = []
    linear.register_forward_hook(lambda m, inputs, out: seen.append(float(inputs[0].max())))
    for name in ("calib", "eval"):
        data = torch.from_numpy(np.load(os.path.join(d, name + ".npy")))
        seen.clear()
        with torch.no_grad():
            out = torch.cat([model(data[i:i + 16]) for i in range(0, len(data), 16)])
        print("%s %-5s classifier input max %8.3f  output std %.4f  (%d samples)" %
              (a.arch, name, max(seen), float(out.std()), len(data)))


if __name__ == "__main__":
    main()
