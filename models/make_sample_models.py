"""Trains and exports the two bundled sample models on Fashion-MNIST.

Makes, next to this script:
  resnet_small/model.onnx           ResNet-style CNN (Conv-BN-ReLU, residual Add,
                                    stride-2 blocks with 1x1 conv+BN projection)
  mobilenetv2_small/model.onnx      MobileNetV2-style CNN (inverted residuals:
                                    1x1 expand, depthwise 3x3, 1x1 linear project,
                                    ReLU6 exported as Clip(0, 6))
  <name>/test_data_set_0/{input_0,output_0}.pb
                                    first 100 test images ("input", [100,1,28,28])
                                    and PyTorch eval-mode logits ("logits", [100,10])
  <name>/accuracy.txt               fp32 top-1 test accuracy (10,000 images),
                                    epochs and parameter count

Both models: ONNX opset 13, input "input" [batch,1,28,28] float32 with pixel/255
scaling only (no mean/std), output "logits" [batch,10]. BatchNormalization is
kept as separate nodes (not folded into Conv) so the quantizer sees it.

Setup:  bash models/setup_python.sh          (Debian python3-torch/onnx/numpy)
Run:    /usr/bin/python3 models/make_sample_models.py
        (about 10-12 minutes on 2 idle CPU cores, longer on a busy machine;
        deterministic for a given machine)
Data:   /usr/share/datasets/fashion-mnist/*.gz (Debian dataset-fashion-mnist)
"""

import argparse
import gzip
import os
import random
import sys
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

import onnx_numpy_ref

DATA_DIR = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
SEED = 20240611
BATCH_SIZE = 128
NUM_TEST_VECTORS = 100


# ----------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------

def read_idx_gz(path):
    """Reads an IDX file (gzip-compressed) into a numpy uint8 array."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    arr = np.frombuffer(data, dtype=np.uint8, offset=offset)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: expected {dims}, got {arr.size} bytes")
    return arr.reshape(dims)


def load_split(split):
    """Returns (images float32 [N,1,28,28] in [0,1], labels int64 [N])."""
    images = read_idx_gz(os.path.join(DATA_DIR, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx_gz(os.path.join(DATA_DIR, f"{split}-labels-idx1-ubyte.gz"))
    x = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return x, labels.astype(np.int64)


# ----------------------------------------------------------------------------
# Models
# ----------------------------------------------------------------------------

def conv_bn(cin, cout, k, stride=1, groups=1):
    """Conv (bias=False, 'same' padding) followed by BatchNorm."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):
    """Conv3x3-BN-ReLU-Conv3x3-BN + shortcut, then ReLU (ResNet v1)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, cout, 3, stride), nn.ReLU(),
            conv_bn(cout, cout, 3))
        self.shortcut = (conv_bn(cin, cout, 1, stride)
                         if stride != 1 or cin != cout else nn.Identity())
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class ResNetSmall(nn.Module):
    """28x28 stem 16ch -> 16ch (28x28) -> 32ch (14x14) -> 64ch (7x7) -> GAP -> FC."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(1, 16, 3), nn.ReLU())
        self.blocks = nn.Sequential(
            BasicBlock(16, 16, 1),
            BasicBlock(16, 32, 2),
            BasicBlock(32, 32, 1),
            BasicBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)  # exports as GlobalAveragePool
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(self.flatten(self.pool(x)))


class InvertedResidual(nn.Module):
    """1x1 expand-BN-ReLU6, depthwise 3x3-BN-ReLU6, 1x1 project-BN (linear).

    The residual Add (no activation after it) is used when stride is 1 and the
    channel count is unchanged.
    """

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.body = nn.Sequential(
            conv_bn(cin, hidden, 1), nn.ReLU6(),
            conv_bn(hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(),
            conv_bn(hidden, cout, 1))
        self.use_residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.use_residual else y


class MobileNetV2Small(nn.Module):
    """Stem 3x3 16ch, 6 inverted residual blocks (28->14->7), 1x1 128ch, GAP, FC."""

    # (out channels, stride, expansion); the 28x28 block uses a small expansion
    # to keep CPU training time down (MobileNetV2 itself uses 1 there).
    CONFIG = [(16, 1, 2), (24, 2, 4), (24, 1, 4), (32, 2, 4), (32, 1, 4), (64, 1, 4)]

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(1, 16, 3), nn.ReLU6())
        blocks, cin = [], 16
        for cout, stride, expand in self.CONFIG:
            blocks.append(InvertedResidual(cin, cout, stride, expand))
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(conv_bn(cin, 128, 1), nn.ReLU6())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(128, num_classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(self.flatten(self.pool(x)))


# ----------------------------------------------------------------------------
# Training and evaluation
# ----------------------------------------------------------------------------

def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def channels_last(x):
    # NHWC is markedly faster for these small convs (esp. depthwise) on CPU.
    return x.contiguous(memory_format=torch.channels_last)


@torch.no_grad()
def predict(model, x, batch=1000):
    model.eval()
    return torch.cat([model(channels_last(x[i:i + batch]))
                      for i in range(0, len(x), batch)])


def accuracy(model, x, y):
    return (predict(model, x).argmax(1) == y).float().mean().item()


def train(model, x_train, y_train, epochs, lr, seed):
    """Adam + one-cycle schedule, batch 128, reshuffled every epoch."""
    model.to(memory_format=torch.channels_last)
    gen = torch.Generator().manual_seed(seed)
    steps_per_epoch = (len(x_train) + BATCH_SIZE - 1) // BATCH_SIZE
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=lr, total_steps=epochs * steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        t0 = time.time()
        model.train()
        perm = torch.randperm(len(x_train), generator=gen)
        total = 0.0
        for i in range(0, len(x_train), BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            loss = loss_fn(model(channels_last(x_train[idx])), y_train[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        print(f"  epoch {epoch + 1}/{epochs}: train loss {total / len(x_train):.4f} "
              f"({time.time() - t0:.0f}s)", flush=True)
    model.eval()


# ----------------------------------------------------------------------------
# Export
# ----------------------------------------------------------------------------

def undo_initializer_dedup(m):
    """Replaces `Identity(initializer)` nodes by a copy of the initializer.

    torch's exporter merges initializers with equal values and reads the
    duplicates through Identity nodes. In ResNetSmall the BN biases of a body
    and of its projection shortcut get identical gradients (they feed the same
    Add), so they stay equal and get merged; give each BN its own initializer.
    """
    inits = {t.name: t for t in m.graph.initializer}
    keep = []
    for node in m.graph.node:
        if node.op_type == "Identity" and node.input[0] in inits:
            copy = onnx.TensorProto()
            copy.CopyFrom(inits[node.input[0]])
            copy.name = node.output[0]
            m.graph.initializer.append(copy)
        else:
            keep.append(node)
    del m.graph.node[:]
    m.graph.node.extend(keep)


def constants_to_initializers(m):
    """Moves Constant nodes (Clip's min/max scalars) into graph.initializer."""
    keep = []
    for node in m.graph.node:
        if node.op_type == "Constant":
            assert node.attribute[0].name == "value", node
            t = onnx.TensorProto()
            t.CopyFrom(node.attribute[0].t)
            t.name = node.output[0]
            m.graph.initializer.append(t)
        else:
            keep.append(node)
    del m.graph.node[:]
    m.graph.node.extend(keep)


def export_onnx(model, path):
    """Exports at opset 13 keeping BatchNormalization unfolded, then checks it.

    torch folds BN into the preceding Conv only when exporting with
    TrainingMode.EVAL (its eval peephole pass). With TrainingMode.PRESERVE and
    the module in eval mode, BN is exported as an inference-mode
    BatchNormalization node; constant folding is off as well so nothing else is
    rewritten. The graph is then tidied so that every weight, BN statistic and
    Clip bound is a graph initializer (no Constant or Identity nodes).
    """
    model.eval()
    dummy = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(
        model, dummy, path,
        opset_version=OPSET,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
        keep_initializers_as_inputs=False)
    m = onnx.load(path)
    undo_initializer_dedup(m)
    constants_to_initializers(m)
    onnx.save(m, path)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    if "BatchNormalization" not in ops:
        sys.exit(f"{path}: BatchNormalization was folded away")
    if ops.count("BatchNormalization") != ops.count("Conv"):
        sys.exit(f"{path}: expected one BatchNormalization per Conv")
    if "Constant" in ops or "Identity" in ops:
        sys.exit(f"{path}: unexpected Constant/Identity nodes (weights must be initializers)")
    if [i.name for i in m.graph.input] != ["input"]:
        sys.exit(f"{path}: graph inputs {[i.name for i in m.graph.input]}")
    return m


def op_histogram(m):
    hist = {}
    for n in m.graph.node:
        hist[n.op_type] = hist.get(n.op_type, 0) + 1
    return dict(sorted(hist.items()))


def write_test_data(model, onnx_model, x, out_dir):
    """Writes test_data_set_0/{input_0,output_0}.pb and cross-checks the graph."""
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).numpy()
    ds = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(ds, exist_ok=True)
    for name, arr, fname in (("input", x, "input_0.pb"), ("logits", logits, "output_0.pb")):
        t = numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), name)
        with open(os.path.join(ds, fname), "wb") as f:
            f.write(t.SerializeToString())
    # The exported graph, evaluated independently of torch, must agree.
    ref = onnx_numpy_ref.run(onnx_model, {"input": x})["logits"]
    err = np.abs(ref - logits).max()
    print(f"  numpy reference of the ONNX graph vs torch: max |diff| {err:.2e}")
    if err > 1e-3:
        sys.exit(f"{out_dir}: ONNX graph disagrees with torch ({err})")


def build(name, model, epochs, lr, data, out_root):
    x_train, y_train, x_test, y_test = data
    out_dir = os.path.join(out_root, name)
    os.makedirs(out_dir, exist_ok=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {params} parameters, {epochs} epochs", flush=True)
    t0 = time.time()
    train(model, x_train, y_train, epochs, lr, SEED)
    train_s = time.time() - t0
    acc = accuracy(model, x_test, y_test)
    model.to(memory_format=torch.contiguous_format)

    path = os.path.join(out_dir, "model.onnx")
    m = export_onnx(model, path)
    write_test_data(model, m, x_test[:NUM_TEST_VECTORS].numpy(), out_dir)
    with open(os.path.join(out_dir, "accuracy.txt"), "w") as f:
        f.write(f"model: {name}\n")
        f.write(f"fp32_top1_accuracy: {acc:.4f}\n")
        f.write(f"test_images: {len(x_test)}\n")
        f.write(f"epochs: {epochs}\n")
        f.write(f"parameters: {params}\n")
        f.write("preprocessing: pixel/255.0, float32, NCHW [N,1,28,28], no mean/std\n")
    size = os.path.getsize(path)
    print(f"{name}: fp32 top-1 {acc:.4f} on {len(x_test)} test images, "
          f"{size} bytes, trained in {train_s:.0f}s")
    print(f"  ops: {op_histogram(m)}", flush=True)
    if size >= 2 * 1024 * 1024:
        sys.exit(f"{path}: {size} bytes, over 2 MB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resnet-epochs", type=int, default=6)
    ap.add_argument("--mobilenet-epochs", type=int, default=6)
    ap.add_argument("--train-limit", type=int, default=0,
                    help="use only the first N training images (smoke tests)")
    ap.add_argument("--out-dir", default=HERE)
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    t_start = time.time()

    x_train, y_train = load_split("train")
    x_test, y_test = load_split("t10k")
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    data = tuple(torch.from_numpy(a) for a in (x_train, y_train, x_test, y_test))

    seed_everything(SEED)
    build("resnet_small", ResNetSmall(), args.resnet_epochs, 3e-3, data, args.out_dir)
    seed_everything(SEED + 1)
    build("mobilenetv2_small", MobileNetV2Small(), args.mobilenet_epochs, 3e-3, data,
          args.out_dir)
    print(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
