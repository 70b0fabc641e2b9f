"""Calibration methods against each other on the zoo's normalisation variants.

For every <arch>/norm-<kind>/model.onnx under --zoo (inputs in [0,1], ImageNet mean/std,
[-1,1] and BGR 0-255, BN statistics re-estimated for each), quantizes at fusion level `full`
with each of --method=auto, entropy, percentile, mse, max and balanced_mse on the variant's calib.npy and
reports the int8 output SQNR (dB, vs fp32 on eval.npy). The check of issue "auto loses at most
1 dB against the best single method" is the `auto - best` column. Writes <out>/methods.jsonl;
`--report FILE` appends the markdown table to FILE.

  /usr/bin/python3 models/zoo/method_sweep.py --zoo out/zoo --out out/zoo-runs [--report docs/zoo.md]
      [--quantize PATH] [--only resnet18,...]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUANTIZE = os.path.join(ROOT, "bazel-bin", "tools", "quantize", "quantize")
METHODS = ("auto", "entropy", "percentile", "mse", "max", "balanced_mse")
FULL_ROW = re.compile(r"^full\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s")


def sqnr(quantize, model, data, method, work):
    report_json = os.path.join(work, "report.json")
    if os.path.exists(report_json):  # the five methods share `work`: never read another run's
        os.remove(report_json)
    p = subprocess.run([quantize, f"--model={model}", f"--calib_data={data}/calib.npy", f"--eval_data={data}/eval.npy",
                        "--fusion=full", f"--method={method}", "--analysis_samples=0", f"--output={work}"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return None, None
    pooled = None
    for line in p.stdout.splitlines():
        m = FULL_ROW.match(line)
        if m:
            pooled = float(m.group(3))
    median = None
    try:
        with open(report_json) as f:
            median = json.load(f)["levels"][0]["outputs"][0].get("median_sample_sqnr_db")
    except (OSError, KeyError, IndexError, TypeError, ValueError):
        pass
    return pooled, (None if median is None else round(median, 2))


def sweep(args):
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "methods.jsonl"), "w") as out:
        only = set(args.only.split(",")) if args.only else None
        for model in sorted(glob.glob(os.path.join(args.zoo, "*", "norm-*", "model.onnx"))):
            data = os.path.dirname(model)
            ident = os.path.relpath(data, args.zoo)
            if only and ident.split(os.sep)[0] not in only:
                continue
            work = os.path.join(args.out, "methods", ident)
            row = {"id": ident}
            for method in METHODS:
                row[method], row[method + "_median"] = sqnr(args.quantize, model, data, method, work)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(ident, " ".join(f"{m}:{row[m]}" for m in METHODS), flush=True)


def gap_to_best(row, suffix=""):
    """auto's SQNR minus the best single method's (None when a figure is missing)."""
    singles = [row.get(m + suffix) for m in METHODS[1:]]
    if row.get("auto" + suffix) is None or any(v is None for v in singles):
        return None
    return row["auto" + suffix] - max(singles)


def report(args):
    rows = [json.loads(l) for l in open(os.path.join(args.out, "methods.jsonl")) if l.strip()]
    cell = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    lines = ["", "`full` level, output SQNR in dB vs fp32 on the variant's eval.npy, pooled over the images / the",
             "median image (`/usr/bin/python3 models/zoo/method_sweep.py`). Each variant re-estimated its BN",
             "statistics with inputs normalised that way. `auto - best` is auto's SQNR minus the best single",
             "method's, pooled / median.", "",
             "| model | " + " | ".join(METHODS) + " | auto - best |", "|---|" + "---:|" * (len(METHODS) + 1)]
    gaps = {"": [], "_median": []}
    for r in rows:
        for suffix in gaps:
            gaps[suffix].append(gap_to_best(r, suffix))
        lines.append(f"| {r['id']} | " + " | ".join(f"{cell(r[m])} / {cell(r.get(m + '_median'))}" for m in METHODS) +
                     f" | {cell(gaps[''][-1])} / {cell(gaps['_median'][-1])} |")
    for suffix, what in (("", "pooled"), ("_median", "median image")):
        known = [g for g in gaps[suffix] if g is not None]
        within = sum(g >= -1.0 for g in known)
        incomplete = len(gaps[suffix]) - len(known)
        missing = f" ({incomplete} without every method's figure)" if incomplete else ""
        lines.append(f"- {what}: `auto` within 1 dB of the best single method on {within} of {len(known)} variants"
                     f"{missing}; worst `auto - best` {min(known):+.2f} dB." if known else f"- {what}: no figures.")
    lines.append("")
    with open(args.report, "a") as f:
        f.write("\n".join(lines))
    print(f"appended to {args.report}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default=os.path.join(ROOT, "out", "zoo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "zoo-runs"))
    ap.add_argument("--report", default="")
    ap.add_argument("--only", default="", help="comma-separated arch names")
    ap.add_argument("--quantize", default=QUANTIZE,
                    help="the quantize binary (a copy lets bazel rebuild while the sweep runs)")
    args = ap.parse_args()
    if args.report:
        report(args)
    else:
        sweep(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
