"""The zoo's architecture table (not a script).

ARCHS[name] = Arch(ctor, input_hw, dyn, kind, opsets)
  ctor      -- builds the model (weights=None) with a seeded initialisation
  input_hw  -- None: square, the export script's --size; else a fixed (H, W)
  dyn       -- which input axes are dynamic in the ONNX export besides batch:
               'hw' (height and width), 'w' (width only) or '' (batch only)
  kind      -- 'classification' ([N, classes]), 'dense' ([N, C, H, W]) or
               'sequence' ([N, W', classes], the CRNN)
  opsets    -- opsets to export (legacy_softmax exists only below opset 13)
"""

import zlib
from collections import namedtuple

import torch
import torch.nn as nn
import torchvision.models as tvm
from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large, fcn_resnet50, lraspp_mobilenet_v3_large

Arch = namedtuple("Arch", "ctor input_hw dyn kind opsets")
OPSETS = (9, 11, 13, 17)


class SegOut(nn.Module):
    """Wraps a torchvision segmentation model to return only out['out']."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def conv_bn_relu(cin, cout, k=3, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class SmallUNet(nn.Module):
    """Two-level U-Net: 8 convs, strided-conv downsampling, ConvTranspose
    upsampling (+BN+ReLU) and skip Concats; 4-class dense output."""

    def __init__(self, classes=4):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(3, 16), conv_bn_relu(16, 16))
        self.enc2 = nn.Sequential(conv_bn_relu(16, 32, stride=2), conv_bn_relu(32, 32))
        self.mid = conv_bn_relu(32, 64, stride=2)
        self.up2 = nn.Sequential(nn.ConvTranspose2d(64, 32, 2, 2, bias=False),
                                 nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.dec2 = conv_bn_relu(64, 32)
        self.up1 = nn.Sequential(nn.ConvTranspose2d(32, 16, 2, 2, bias=False),
                                 nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.dec1 = conv_bn_relu(32, 16)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        m = self.mid(e2)
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


class CRNN(nn.Module):
    """Text-line recogniser: conv backbone (BN/ReLU) -> mean over height ->
    2-layer TransformerEncoder (d_model 128, 4 heads, GELU, batch_first) ->
    per-column Linear. Input [N, 3, 32, W], output [N, W/4, classes]."""

    def __init__(self, classes=37, d=128):
        super().__init__()
        self.backbone = nn.Sequential(
            conv_bn_relu(3, 32), nn.MaxPool2d(2),           # 16 x W/2
            conv_bn_relu(32, 64), nn.MaxPool2d(2),          # 8 x W/4
            conv_bn_relu(64, d), nn.MaxPool2d((2, 1)),      # 4 x W/4
            conv_bn_relu(d, d))
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.fc = nn.Linear(d, classes)

    def forward(self, x):
        f = self.backbone(x).mean(dim=2)       # [N, d, W']
        f = f.permute(0, 2, 1)                 # [N, W', d]
        return self.fc(self.encoder(f))


class LegacySoftmaxNet(nn.Module):
    """resnet18-style stem + one basic block, 1x1 conv to 10 classes, global
    average pool, a run-time-shape flatten and Softmax(dim=1)."""

    def __init__(self, classes=10):
        super().__init__()
        r = tvm.resnet18(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1[0])
        self.head = nn.Conv2d(64, classes, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        x = self.pool(self.head(self.stem(x)))
        x = x.reshape(x.shape[0], -1)
        return torch.softmax(x, dim=1)


def vit_tiny():
    m = tvm.VisionTransformer(image_size=64, patch_size=8, num_layers=4, num_heads=3,
                              hidden_dim=192, mlp_dim=768, num_classes=1000)
    # torchvision zero-initialises the head, which would make every output 0.
    nn.init.normal_(m.heads.head.weight, std=192 ** -0.5)
    nn.init.normal_(m.heads.head.bias, std=0.01)
    return m


ARCHS = {
    "resnet18": Arch(lambda: tvm.resnet18(weights=None), None, "hw", "classification", OPSETS),
    "resnet50": Arch(lambda: tvm.resnet50(weights=None), None, "hw", "classification", OPSETS),
    "mobilenet_v2": Arch(lambda: tvm.mobilenet_v2(weights=None), None, "hw", "classification", OPSETS),
    "mobilenet_v3_small": Arch(lambda: tvm.mobilenet_v3_small(weights=None), None, "hw",
                               "classification", OPSETS),
    "mobilenet_v3_large": Arch(lambda: tvm.mobilenet_v3_large(weights=None), None, "hw",
                               "classification", OPSETS),
    "shufflenet_v2_x1_0": Arch(lambda: tvm.shufflenet_v2_x1_0(weights=None), None, "hw",
                               "classification", OPSETS),
    "efficientnet_b0": Arch(lambda: tvm.efficientnet_b0(weights=None), None, "hw",
                            "classification", OPSETS),
    "regnet_x_400mf": Arch(lambda: tvm.regnet_x_400mf(weights=None), None, "hw",
                           "classification", OPSETS),
    "googlenet": Arch(lambda: tvm.googlenet(weights=None, aux_logits=False, init_weights=True),
                      None, "hw", "classification", OPSETS),
    "densenet121": Arch(lambda: tvm.densenet121(weights=None), None, "hw", "classification", OPSETS),
    "squeezenet1_1": Arch(lambda: tvm.squeezenet1_1(weights=None), None, "hw", "classification",
                          OPSETS),
    "lraspp_mobilenet_v3_large": Arch(
        lambda: SegOut(lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)),
        None, "hw", "dense", OPSETS),
    "unet_small": Arch(SmallUNet, None, "hw", "dense", OPSETS),
    "crnn": Arch(CRNN, (32, 128), "w", "sequence", OPSETS),
    "vit_tiny": Arch(vit_tiny, (64, 64), "", "classification", OPSETS),
    "legacy_softmax": Arch(LegacySoftmaxNet, None, "hw", "classification", (9, 11)),
}

# A second zoo (`export_zoo.py --archs <names> --out out/zoo-extra`, not part of make_zoo.sh's
# default set): torchvision architectures with forms the first zoo lacks -- ConvNeXt's
# channels-last LayerNorm and 7x7 depthwise convolutions, Swin's shifted-window attention (roll,
# masks), EfficientNetV2's fused MBConv, MnasNet, RegNetY's squeeze-excitation, ResNeXt's grouped
# convolutions, Inception-v3, DeepLabV3's dilated ASPP and FCN on a dilated ResNet-50.
EXTRA = {
    "convnext_tiny": Arch(lambda: tvm.convnext_tiny(weights=None), None, "hw", "classification", (13, 17)),
    "swin_t": Arch(lambda: tvm.swin_t(weights=None), None, "hw", "classification", (13, 17)),
    "efficientnet_v2_s": Arch(lambda: tvm.efficientnet_v2_s(weights=None), None, "hw", "classification",
                              (11, 13, 17)),
    "mnasnet0_5": Arch(lambda: tvm.mnasnet0_5(weights=None), None, "hw", "classification", (11, 13, 17)),
    "regnet_y_400mf": Arch(lambda: tvm.regnet_y_400mf(weights=None), None, "hw", "classification",
                           (11, 13, 17)),
    "resnext50_32x4d": Arch(lambda: tvm.resnext50_32x4d(weights=None), None, "hw", "classification",
                            (11, 13, 17)),
    "inception_v3": Arch(lambda: tvm.inception_v3(weights=None, aux_logits=False, init_weights=True),
                         None, "hw", "classification", (11, 13, 17)),
    "deeplabv3_mobilenet_v3_large": Arch(
        lambda: SegOut(deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)),
        None, "hw", "dense", (11, 13, 17)),
    "fcn_resnet50": Arch(lambda: SegOut(fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)),
                         None, "hw", "dense", (11, 13, 17)),
}
# Every architecture either zoo can export.
ALL = {**ARCHS, **EXTRA}

# Architectures that also get the normalisation sweep (issue 10: `auto` against the best single
# method on every zoo model, inputs normalised four ways): all but the two-block legacy_softmax
# net, which exists for its export form.
NORM_SWEEP = tuple(name for name in ARCHS if name != "legacy_softmax")
# Architectures trained on Fashion-MNIST by train_fashion.py (directory <arch>_fmnist).
FASHION = ("resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0")


def build(name):
    """Builds arch `name` (or '<arch>_fmnist', 10 classes) with its seeded init, eval mode."""
    torch.manual_seed(zlib.crc32(name.encode()))
    if name.endswith("_fmnist"):
        base = name[:-len("_fmnist")]
        return getattr(tvm, base)(weights=None, num_classes=10).eval()
    return ALL[name].ctor().eval()


def input_hw(name, size):
    a = ALL[name]
    return a.input_hw if a.input_hw else (size, size)


def dynamic_axes(name):
    dyn = ALL[name].dyn if name in ALL else "hw"
    axes = {0: "batch"}
    if "h" in dyn:
        axes[2] = "height"
    if "w" in dyn:
        axes[3] = "width"
    kind = ALL[name].kind if name in ALL else "classification"
    out = {0: "batch"}
    if kind == "dense":
        out.update({k: v + "_out" for k, v in axes.items() if k > 0})
    elif kind == "sequence" and 3 in axes:
        out[1] = "steps"
    return {"input": axes, "output": out}
