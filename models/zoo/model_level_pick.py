"""Would a model-level choice of calibration method, made on calibration images, pass issue 10's bar?

`auto` chooses a threshold per tensor. This script simulates choosing, per model, between `auto`
and other methods applied to every tensor, by the pooled output SQNR that each gets on images
the user has (calibration images), then scores that choice on the evaluation images. It reads
`method_sweep.py` results only; nothing here quantizes.

  # Halves of each variant's calib.npy: calibrate on the first, score on the second
  # (--in_sample: calibrate and score on all of it).
  /usr/bin/python3 models/zoo/model_level_pick.py split --zoo out/zoo-norm --out out/zoo-norm-split
  /usr/bin/python3 models/zoo/method_sweep.py --zoo out/zoo-norm-split --out out/zoo-norm-runs-split
  # The pick made on the split run, scored on the normal run (calib.npy -> eval.npy).
  /usr/bin/python3 models/zoo/model_level_pick.py score --pick out/zoo-norm-runs-split \\
      --eval out/zoo-norm-runs --candidates auto,max [--margin 0.5]

The pick is `auto` unless a candidate's pooled SQNR on the pick run beats auto's by more than
--margin dB (then the best such candidate). The bar: within 1 dB of the best single method on
the evaluation run, pooled and on the median image.
"""

import argparse
import glob
import json
import os

import numpy as np

SINGLE = ("entropy", "percentile", "mse", "max", "balanced_mse")


def split(args):
    for data in sorted(glob.glob(os.path.join(args.zoo, "*", "norm-*"))):
        out = os.path.join(args.out, os.path.relpath(data, args.zoo))
        os.makedirs(out, exist_ok=True)
        link = os.path.join(out, "model.onnx")
        if not os.path.exists(link):
            os.symlink(os.path.realpath(os.path.join(data, "model.onnx")), link)
        calib = np.load(os.path.join(data, "calib.npy"))
        if args.in_sample:  # calibrate and score on the same images
            np.save(os.path.join(out, "calib.npy"), calib)
            np.save(os.path.join(out, "eval.npy"), calib)
            continue
        half = len(calib) // 2
        np.save(os.path.join(out, "calib.npy"), calib[:half])
        np.save(os.path.join(out, "eval.npy"), calib[half:])
    print(f"wrote {args.out}")


def load(run):
    with open(os.path.join(run, "methods.jsonl")) as f:
        return {row["id"]: row for row in map(json.loads, f)}


def score(args):
    pick_run, eval_run = load(args.pick), load(args.eval)
    candidates = [c for c in args.candidates.split(",") if c != "auto"]
    counts = {"auto pooled": 0, "auto median": 0, "pick pooled": 0, "pick median": 0}
    change_pooled, change_median, n = 0.0, 0.0, 0
    for ident, row in sorted(eval_run.items()):
        if ident not in pick_run:
            continue
        n += 1
        seen = pick_run[ident]
        pick, best = "auto", seen["auto"]
        for c in candidates:
            if seen.get(c) is not None and seen[c] > best + args.margin:
                pick, best = c, seen[c]
        best_pooled = max(row[m] for m in SINGLE)
        best_median = max(row[m + "_median"] for m in SINGLE)
        counts["auto pooled"] += row["auto"] - best_pooled >= -1
        counts["auto median"] += row["auto_median"] - best_median >= -1
        counts["pick pooled"] += row[pick] - best_pooled >= -1
        counts["pick median"] += row[pick + "_median"] - best_median >= -1
        change_pooled += row[pick] - row["auto"]
        change_median += row[pick + "_median"] - row["auto_median"]
        if pick != "auto":
            print(f"{ident}: pick {pick}; eval pooled {row[pick]:.2f} (auto {row['auto']:.2f}), "
                  f"median image {row[pick + '_median']:.2f} (auto {row['auto_median']:.2f})")
    print(f"{n} variants; within 1 dB of the best single method: pooled {counts['auto pooled']} -> "
          f"{counts['pick pooled']}, median image {counts['auto median']} -> {counts['pick median']}; "
          f"mean change pooled {change_pooled / n:+.2f} dB, median image {change_median / n:+.2f} dB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split")
    s.add_argument("--zoo", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--in_sample", action="store_true", help="eval.npy = calib.npy (all of it) instead of halves")
    c = sub.add_parser("score")
    c.add_argument("--pick", required=True, help="method_sweep.py run the choice is made on")
    c.add_argument("--eval", required=True, help="method_sweep.py run the choice is scored on")
    c.add_argument("--candidates", default="auto,max")
    c.add_argument("--margin", type=float, default=0.0)
    args = parser.parse_args()
    split(args) if args.command == "split" else score(args)


if __name__ == "__main__":
    main()
