"""Shared helpers for the model-zoo scripts (not a script).

Real photographs come from Debian packages (see README.md):
  python3-skimage: /usr/lib/python3/dist-packages/skimage/data/
  python3-sklearn: /usr/lib/python3/dist-packages/sklearn/datasets/images/
Calibration / BN-statistics crops and evaluation crops are taken from DISJOINT
source images. All randomness is seeded, so every array written is deterministic.
"""

import json
import os

import numpy as np
import torch
from PIL import Image

SKIMAGE_DIR = "/usr/lib/python3/dist-packages/skimage/data"
SKLEARN_DIR = "/usr/lib/python3/dist-packages/sklearn/datasets/images"

# Source images for BN statistics and calibration (grey ones are replicated to RGB).
CALIB_SOURCES = [
    (SKIMAGE_DIR, "astronaut.png"), (SKIMAGE_DIR, "coffee.png"),
    (SKIMAGE_DIR, "motorcycle_left.png"), (SKIMAGE_DIR, "motorcycle_right.png"),
    (SKIMAGE_DIR, "rocket.jpg"), (SKIMAGE_DIR, "hubble_deep_field.jpg"),
    (SKIMAGE_DIR, "camera.png"), (SKIMAGE_DIR, "brick.png"), (SKIMAGE_DIR, "grass.png"),
]
# Held-out source images, used only for eval.npy.
EVAL_SOURCES = [
    (SKIMAGE_DIR, "chelsea.png"), (SKLEARN_DIR, "china.jpg"), (SKLEARN_DIR, "flower.jpg"),
    (SKIMAGE_DIR, "ihc.png"), (SKIMAGE_DIR, "retina.jpg"), (SKIMAGE_DIR, "coins.png"),
    (SKIMAGE_DIR, "gravel.png"), (SKIMAGE_DIR, "moon.png"),
]

IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)
NORM_KINDS = ("unit", "meanstd", "pm1", "bgr255")

# Seeds of the three crop streams: BN statistics and calibration use the same
# source images with different seeds (distinct crops); eval uses other images.
SEED_BN, SEED_CALIB, SEED_EVAL = 1001, 2002, 3003

_image_cache = {}


def _load(sources):
    key = tuple(sources)
    if key not in _image_cache:
        ims = []
        for d, f in sources:
            im = Image.open(os.path.join(d, f)).convert("RGB")
            ims.append(im)
        _image_cache[key] = ims
    return _image_cache[key]


def random_crops(split, n, h, w, seed):
    """n uint8 crops [n, h, w, 3] (RGB): seeded random image, scale, position, h-flip.

    The crop has the target aspect ratio and covers 20-100% of the shorter side's
    largest such window; it is resized with PIL bilinear to (h, w)."""
    ims = _load(CALIB_SOURCES if split == "calib" else EVAL_SOURCES)
    rng = np.random.RandomState(seed)
    out = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        im = ims[rng.randint(len(ims))]
        iw, ih = im.size
        max_cw = min(iw, ih * w / h)
        scale = rng.uniform(0.2, 1.0)
        cw = max(4, int(round(max_cw * scale)))
        ch = max(4, int(round(cw * h / w)))
        x0 = rng.randint(0, iw - cw + 1)
        y0 = rng.randint(0, ih - ch + 1)
        crop = im.crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), Image.BILINEAR)
        a = np.asarray(crop, np.uint8)
        if rng.rand() < 0.5:
            a = a[:, ::-1]
        out[i] = a
    return out


def normalize(u8, kind):
    """uint8 NHWC RGB -> float32 NCHW in the given normalisation."""
    x = u8.astype(np.float32)
    if kind == "unit":
        x = x / 255.0
    elif kind == "meanstd":
        x = (x / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
    elif kind == "pm1":
        x = x / 127.5 - 1.0
    elif kind == "bgr255":
        x = x[..., ::-1]
    else:
        raise ValueError("unknown normalisation " + kind)
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32)


def image_set(split, n, h, w, kind="meanstd"):
    seed = {"bn": SEED_BN, "calib": SEED_CALIB, "eval": SEED_EVAL}[split]
    src = "eval" if split == "eval" else "calib"
    return normalize(random_crops(src, n, h, w, seed), kind)


def setup_torch(seed=0):
    torch.set_num_threads(2)
    torch.manual_seed(seed)
    np.random.seed(seed)


@torch.no_grad()
def estimate_bn_stats(model, data, batch=32):
    """Cumulative-average BN statistics over `data` (float32 NCHW), then eval()."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model.eval(), 0
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    for i in range(0, len(data), batch):
        model(torch.from_numpy(data[i:i + batch]))
    for m in bns:
        m.momentum = 0.1
    return model.eval(), len(bns)


@torch.no_grad()
def run_batched(model, data, batch=16):
    outs = [model(torch.from_numpy(data[i:i + batch])) for i in range(0, len(data), batch)]
    return torch.cat(outs).numpy()


def write_idx1_labels(path, labels):
    labels = np.asarray(labels, np.uint8)
    with open(path, "wb") as f:
        f.write(np.array([0x00000801, len(labels)], ">u4").tobytes())
        f.write(labels.tobytes())


def read_idx(path):
    """IDX (optionally gzipped) -> numpy uint8 array."""
    import gzip
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")


def check_onnx(path):
    import onnx
    try:
        onnx.checker.check_model(onnx.load(path))
        return "ok"
    except Exception as e:  # noqa: BLE001 - recorded, not raised
        return "FAIL: " + str(e).splitlines()[0][:300]


def export_onnx(model, example, path, opset, dyn_axes):
    """torch.onnx.export with the zoo's fixed conventions; raises on failure."""
    torch.onnx.export(model, example, path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes=dyn_axes,
                      do_constant_folding=True)


def sqnr_db(ref, q):
    ref = ref.astype(np.float64).ravel()
    err = ref - q.astype(np.float64).ravel()
    den = float(np.sum(err * err))
    return float("inf") if den == 0 else float(10.0 * np.log10(np.sum(ref * ref) / den))


def per_sample_sqnr(ref, q):
    """(median over samples of each sample's SQNR dB, share of the squared error of the worst
    sample): one sample whose output is orders of magnitude larger than the rest makes the pooled
    sqnr_db that sample's alone (pipeline/evaluation.h computes the same in qfuse)."""
    r = ref.astype(np.float64).reshape(len(ref), -1)
    e = r - q.astype(np.float64).reshape(len(q), -1)
    noise = np.sum(e * e, axis=1)
    with np.errstate(divide="ignore"):
        per = np.where(noise == 0, np.inf, 10.0 * np.log10(np.sum(r * r, axis=1) / np.maximum(noise, 1e-300)))
    share = float(noise.max() / noise.sum()) if noise.sum() > 0 else 0.0
    return float(np.median(per)), share


def cosine(ref, q):
    a = ref.astype(np.float64).ravel()
    b = q.astype(np.float64).ravel()
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
