"""Calibration and evaluation data for the three PaddleOCR models (models/ocr/README.md).

Text is rendered with Debian's DejaVu fonts (fonts-dejavu-core, fonts-dejavu-extra) on
backgrounds cut from the zoo's photographs (models/zoo/common.py): calibration lines sit on
the calibration photographs, evaluation lines on the held-out ones, with other seeds, so no
evaluation image shares a background crop or a string with calibration. Every array is
deterministic.

  /usr/bin/python3 models/ocr/make_ocr_data.py --out out/ocr/data [--n 64]

Writes, per model (PaddleOCR's own preprocessing, tools/infer and ppocr/data/imaug):
  rec/   3x48x320 text lines, (x/255 - 0.5) / 0.5, aspect kept, padded right with 0;
         eval_text.json: the strings (the labels of the recogniser)
  cls/   3x48x192 lines, half of them turned by 180 degrees, same normalisation;
         eval_labels.idx: 0 upright, 1 turned (the classifier's two classes)
  det/   3x320x320 photographs with 2-5 lines of text, channels in BGR order (PaddleOCR reads
         with OpenCV), (x/255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
"""

import argparse
import json
import os
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
import common  # noqa: E402  (the zoo's photographs and seeded crops)

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONTS = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf",
         "DejaVuSansCondensed.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSans-Oblique.ttf"]
WORDS = ("open daily menu coffee price total street north station exit parking hotel garden "
         "market bakery museum office invoice order number date time station platform ticket "
         "water bridge river library school office sale discount fresh bread city center route "
         "north south east west avenue road lane phone email address delivery receipt tax cash "
         "card change welcome thank you please keep door closed floor room level stairs lift "
         "warning danger caution power battery charge model serial version update system "
         "quantize integer model layer kernel tensor runtime").split()


def random_text(rng, max_words):
    parts = []
    for _ in range(rng.randint(1, max_words + 1)):
        r = rng.rand()
        if r < 0.15:
            parts.append(str(rng.randint(0, 100000)))
        elif r < 0.22:
            parts.append(f"{rng.randint(1, 100)}.{rng.randint(0, 100):02d}")
        elif r < 0.27:
            parts.append(f"{rng.randint(2000, 2030)}-{rng.randint(1, 13):02d}-{rng.randint(1, 29):02d}")
        else:
            w = WORDS[rng.randint(len(WORDS))]
            c = rng.rand()
            parts.append(w.upper() if c < 0.25 else w.capitalize() if c < 0.6 else w)
    return " ".join(parts)


def colours(rng):
    """(text, background) RGB with a clear contrast, dark on light in most lines."""
    light = rng.randint(170, 256, 3)
    dark = rng.randint(0, 90, 3)
    return (tuple(dark), tuple(light)) if rng.rand() < 0.75 else (tuple(light), tuple(dark))


def render_line(rng, text, background_photo):
    """A tight RGB uint8 image of one line of text, on a plain colour blended with a photo crop."""
    font = ImageFont.truetype(os.path.join(FONT_DIR, FONTS[rng.randint(len(FONTS))]), int(rng.randint(26, 44)))
    left, top, right, bottom = font.getbbox(text)
    pad_x, pad_y = int(rng.randint(4, 16)), int(rng.randint(3, 10))
    w, h = right - left + 2 * pad_x, bottom - top + 2 * pad_y
    fg, bg = colours(rng)
    plain = np.empty((h, w, 3), np.float32)
    plain[:] = bg
    crop = np.asarray(Image.fromarray(background_photo).resize((w, h), Image.BILINEAR), np.float32)
    mix = rng.uniform(0.0, 0.35)
    im = Image.fromarray(np.clip((1 - mix) * plain + mix * crop, 0, 255).astype(np.uint8))
    ImageDraw.Draw(im).text((pad_x - left, pad_y - top), text, font=font, fill=fg)
    return im


def line_tensor(im, height, width):
    """PaddleOCR's resize_norm_img: height fixed, aspect kept (width at most `width`), then
    (x/255 - 0.5) / 0.5 and zero padding on the right. Returns float32 3 x height x width."""
    w = min(width, max(1, int(np.ceil(height * im.width / im.height))))
    a = np.asarray(im.resize((w, height), Image.BILINEAR), np.float32) / 255.0
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = ((a - 0.5) / 0.5).transpose(2, 0, 1)
    return out


def make_lines(split, n, height, width, max_words, seed, turn_half):
    rng = np.random.RandomState(seed)
    photos = common.random_crops(split, n, 64, 256, seed + 7)
    xs, texts, labels = [], [], []
    for i in range(n):
        while True:  # at most a third narrower than the box, so the text is not squeezed
            text = random_text(rng, max_words)
            im = render_line(rng, text, photos[i])
            if height * im.width / im.height <= width:
                break
        turned = bool(turn_half and rng.rand() < 0.5)
        if turned:
            im = im.rotate(180)
        xs.append(line_tensor(im, height, width))
        texts.append(text)
        labels.append(int(turned))
    return np.stack(xs), texts, labels


def make_pages(split, n, size, seed):
    """Photographs with 2-5 lines of text pasted at random places (the detector's input)."""
    rng = np.random.RandomState(seed)
    photos = common.random_crops(split, n, size, size, seed + 11)
    strips = common.random_crops(split, 5 * n, 64, 256, seed + 13)
    xs = []
    for i in range(n):
        page = Image.fromarray(photos[i])
        for j in range(rng.randint(2, 6)):
            line = render_line(rng, random_text(rng, 3), strips[5 * i + j])
            scale = rng.uniform(0.35, 0.9)
            lw, lh = max(8, int(line.width * scale)), max(6, int(line.height * scale))
            if lw >= size:
                lw, lh = size - 2, max(6, int(lh * (size - 2) / lw))
            line = line.resize((lw, lh), Image.BILINEAR)
            page.paste(line, (int(rng.randint(0, size - lw + 1)), int(rng.randint(0, size - lh + 1))))
        bgr = np.asarray(page, np.float32)[..., ::-1] / 255.0
        xs.append(((bgr - common.IMAGENET_MEAN) / common.IMAGENET_STD).transpose(2, 0, 1))
    return np.ascontiguousarray(np.stack(xs), dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/ocr/data")
    ap.add_argument("--n", type=int, default=64, help="images per split")
    args = ap.parse_args()
    for split, seed in (("calib", 4004), ("eval", 5005)):
        src = "calib" if split == "calib" else "eval"
        rec, texts, _ = make_lines(src, args.n, 48, 320, 4, seed, False)
        cls, _, labels = make_lines(src, args.n, 48, 192, 2, seed + 1, True)
        det = make_pages(src, args.n, 320, seed + 2)
        for name, x in (("rec", rec), ("cls", cls), ("det", det)):
            os.makedirs(os.path.join(args.out, name), exist_ok=True)
            np.save(os.path.join(args.out, name, f"{split}.npy"), x)
        if split == "eval":
            with open(os.path.join(args.out, "rec", "eval_text.json"), "w") as f:
                json.dump(texts, f, indent=0)
            common.write_idx1_labels(os.path.join(args.out, "cls", "eval_labels.idx"), labels)
        print(f"{split}: rec {rec.shape}, cls {cls.shape} ({sum(labels)} turned), det {det.shape}")


if __name__ == "__main__":
    main()
