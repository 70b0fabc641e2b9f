"""Trains and exports the mean/std-normalised sample: a VGG-style CNN on Fashion-MNIST.

Makes, next to this script:
  vgg_normalized/model.onnx     3 blocks of Conv-BN-ReLU(-Conv-BN-ReLU)-MaxPool, then
                                Flatten -> Linear -> ReLU -> Linear; opset 13, input "input"
                                [batch,1,28,28], output "logits" [batch,10]
  vgg_normalized/test_data_set_0/{input_0,output_0}.pb
                                first 100 test images (normalised) and PyTorch logits
  vgg_normalized/accuracy.txt   fp32 top-1 on the 10,000 test images

Input preprocessing is the usual Fashion-MNIST normalisation (x/255 - 0.2860) / 0.3530, so
about half of all input values are exactly -0.81 (the background): the distribution on which
TensorRT-style entropy calibration clips every positive pixel. It is the regression model for
qfuse's default calibration (tests/tools/quantize/normalized_input_test.cc).

Setup:  bash models/setup_python.sh
Run:    /usr/bin/python3 models/make_vgg_normalized.py   (about 3-5 minutes on 2 cores)
"""

import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn

import make_sample_models as sm

MEAN = 0.2860
STD = 0.3530


class VggSmall(nn.Module):
    """28x28: 16ch -> pool 14x14: 32ch x2 -> pool 7x7: 64ch -> pool 3x3 -> 128 -> 10."""

    def __init__(self, num_classes=10):
        super().__init__()
        def block(cin, cout):
            return [sm.conv_bn(cin, cout, 3), nn.ReLU()]
        self.features = nn.Sequential(
            *block(1, 16), nn.MaxPool2d(2),
            *block(16, 32), *block(32, 32), nn.MaxPool2d(2),
            *block(32, 64), nn.MaxPool2d(2))
        self.flatten = nn.Flatten()
        self.classifier = nn.Sequential(nn.Linear(64 * 3 * 3, 128), nn.ReLU(), nn.Linear(128, num_classes))

    def forward(self, x):
        return self.classifier(self.flatten(self.features(x)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--out-dir", default=sm.HERE)
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    x_train, y_train = sm.load_split("train")
    x_test, y_test = sm.load_split("t10k")
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    norm = lambda x: (x - np.float32(MEAN)) / np.float32(STD)
    data = tuple(torch.from_numpy(a) for a in (norm(x_train), y_train, norm(x_test), y_test))
    sm.seed_everything(sm.SEED + 2)
    t0 = time.time()
    sm.build("vgg_normalized", VggSmall(), args.epochs, 3e-3, data, args.out_dir)
    path = os.path.join(args.out_dir, "vgg_normalized", "accuracy.txt")
    text = open(path).read().replace("no mean/std", f"then (x - {MEAN}) / {STD}")
    open(path, "w").write(text)
    print(f"total {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
