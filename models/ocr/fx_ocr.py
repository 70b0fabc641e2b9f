"""PyTorch FX post-training quantization of the three PaddleOCR models: the peer for qfuse's numbers.

Each ONNX file becomes a torch module with the same weights (models/ocr/onnx_torch.py); its float
output is checked against qfuse's fp32 output of a `run_ocr.py` run (itself checked against
onnxruntime there). FX then quantizes it as models/zoo/fx_peer.py does the zoo (prepare_fx with
get_default_qconfig_mapping('fbgemm'): HistogramObserver activations with reduce_range,
per-channel int8 weights; convert_fx; run on the 'onednn' engine, as this Debian torch has no
fbgemm), calibrated on the same calibration images as qfuse (all of calib.npy, batches of 16),
and scored on the same evaluation images: output SQNR against fp32 (pooled and median image)
and the task's score (run_ocr.task_score). qfuse's int8 `full` file of the same run is scored
against the same fp32 reference beside it. One JSON line per model to <out>/fx.jsonl, and the
table to stdout (or --report F).

  /usr/bin/python3 models/ocr/fx_ocr.py --qfuse_run out/ocr-run [--out out/ocr-fx] [--no_reduce_range]
      [--fold_affine] [--check]
Needs `run_ocr.py --out <qfuse_run>` first (its qfuse_fp32.f32 and qfuse_int8_full.f32).
"""

import argparse
import json
import os
import sys
import time
import traceback
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "zoo"))
sys.path.insert(0, HERE)
import common  # noqa: E402
import fx_peer  # noqa: E402
import onnx_torch  # noqa: E402
import run_ocr  # noqa: E402

BATCH = 16


def sqnr_pair(ref, q):
    median, _ = common.per_sample_sqnr(ref, q)
    return round(common.sqnr_db(ref, q), 3), round(median, 3)


def one_model(name, pkg, data, qfuse_run, chars, reduce_range, fold_affine):
    rec = {"model": name, "torch": torch.__version__, "batch": BATCH, "fold_affine": fold_affine,
           "qconfig": "fbgemm" if reduce_range else "fbgemm, activations without reduce_range"}
    t0 = time.time()
    path = os.path.join(pkg, run_ocr.ASSETS, run_ocr.MODELS[name][0])
    calib = np.load(os.path.join(data, name, "calib.npy"))
    ev = np.load(os.path.join(data, name, "eval.npy"))
    module = onnx_torch.OnnxModule(path, (BATCH,) + calib.shape[1:], fold_affine=fold_affine).eval()
    # The run's sample count (its --samples: the first N calibration and evaluation images),
    # from the size of its fp32 outputs.
    fp32_path = os.path.join(qfuse_run, name, "qfuse_fp32.f32")
    per_sample = onnx_torch.run_batched(module, ev[:BATCH], BATCH)[0].size
    n, rest = divmod(os.path.getsize(fp32_path) // 4, per_sample)
    if rest or not 0 < n <= min(len(ev), len(calib)) or n % BATCH:
        raise ValueError(f"{fp32_path}: not the outputs of a multiple of {BATCH} samples of {data}/{name}")
    calib, ev = calib[:n], ev[:n]
    rec.update(calib_samples=n, eval_samples=n)
    fp32 = onnx_torch.run_batched(module, ev, BATCH)
    fp32 = fp32 if name == "rec" else fp32.reshape(n, -1)
    qfuse_fp32 = run_ocr.outputs_shape(fp32_path, n, name)
    rec["fp32_vs_qfuse_fp32_max_abs"] = float(np.abs(fp32 - qfuse_fp32).max())
    rec["fp32_task"] = run_ocr.task_score(name, fp32, os.path.join(data, name), fp32, chars)
    qfuse = run_ocr.outputs_shape(os.path.join(qfuse_run, name, "qfuse_int8_full.f32"), n, name)
    rec["qfuse_full"] = dict(zip(("sqnr_db", "median_sample_sqnr_db"), sqnr_pair(fp32, qfuse)),
                             task=run_ocr.task_score(name, qfuse, os.path.join(data, name), fp32, chars))
    try:
        qmodel = fx_peer.quantize(module, calib, "fbgemm", reduce_range=reduce_range)
        q = onnx_torch.run_batched(qmodel, ev, BATCH)
        q = q if name == "rec" else q.reshape(n, -1)
        rec["fx"] = dict(zip(("sqnr_db", "median_sample_sqnr_db"), sqnr_pair(fp32, q)),
                         task=run_ocr.task_score(name, q, os.path.join(data, name), fp32, chars))
        rec["fx_fp32_modules"] = sorted({type(m).__name__ for m in qmodel.modules()
                                         if type(m).__module__.startswith("torch.nn.modules")
                                         and any(True for _ in m.parameters(recurse=False))})
    except Exception as e:  # noqa: BLE001 - FX cannot quantize it: record why
        rec["fx_error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:400])
        rec["fx_error_where"] = traceback.format_exc().strip().splitlines()[-3][:300]
    rec["seconds"] = round(time.time() - t0, 1)
    return rec


def check(r, max_fp32_diff=1e-2):
    """What fails the CI bar: the torch module's float output off qfuse's (the conversion is not
    the model), FX failing, or qfuse's int8 `full` below FX's on pooled SQNR or on the task.
    The float bound leaves room for other CPUs' float rounding (1.8e-4 here, on the
    recogniser's softmax probabilities) and still catches a wrong conversion (about 0.25 on the
    classifier before BatchNorm2d was put in eval mode for the shape run)."""
    if not r["fp32_vs_qfuse_fp32_max_abs"] <= max_fp32_diff:  # NaN fails
        return [f"torch fp32 differs from qfuse fp32 by {r['fp32_vs_qfuse_fp32_max_abs']:.3g}"]
    if "fx" not in r:
        return ["FX: " + r.get("fx_error", "no result")]
    q, fx, problems = r["qfuse_full"], r["fx"], []
    if not q["sqnr_db"] >= fx["sqnr_db"]:
        problems.append(f"qfuse SQNR {q['sqnr_db']:.2f} dB below FX's {fx['sqnr_db']:.2f}")
    for key, higher_is_better in (("accuracy_pct", True), ("exact_pct", True), ("cer_pct", False),
                                  ("iou_with_fp32", True)):
        if key in q["task"]:
            a, b = q["task"][key], fx["task"][key]
            if (a < b) if higher_is_better else (a > b):
                problems.append(f"qfuse {key} {a:.3f} worse than FX's {b:.3f}")
    return problems


def task_text(task, fp32_task):
    if "iou_with_fp32" in task:
        return f"IoU {task['iou_with_fp32']:.3f}"
    if "cer_pct" in task:
        return f"exact {task['exact_pct']:.2f}%, CER {task['cer_pct']:.2f}%"
    return f"accuracy {task['accuracy_pct']:.2f}%"


def report(rows):
    lines = ["| model | fp32 task | FX int8: task, SQNR dB (median image) | qfuse int8 full: task, SQNR dB "
             "(median image) | torch fp32 vs qfuse fp32, max abs |", "|---|---|---|---|---:|"]
    for r in rows:
        fx = r.get("fx")
        fx_s = (f"{task_text(fx['task'], r['fp32_task'])}, {fx['sqnr_db']:.2f} ({fx['median_sample_sqnr_db']:.2f})"
                if fx else "error: " + r.get("fx_error", "?"))
        q = r["qfuse_full"]
        fp32_task = task_text(r["fp32_task"], r["fp32_task"]) if "iou_with_fp32" not in r["fp32_task"] else "-"
        lines.append(f"| {r['model']} | {fp32_task} | {fx_s} | {task_text(q['task'], r['fp32_task'])}, "
                     f"{q['sqnr_db']:.2f} ({q['median_sample_sqnr_db']:.2f}) | {r['fp32_vs_qfuse_fp32_max_abs']:.2g} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pkg", default=os.path.join(run_ocr.run_zoo.ROOT, "out", "ocr", "pkg"))
    ap.add_argument("--data", default=os.path.join(run_ocr.run_zoo.ROOT, "out", "ocr", "data"))
    ap.add_argument("--qfuse_run", default="", help="the --out folder of a run_ocr.py run")
    ap.add_argument("--out", default=os.path.join(run_ocr.run_zoo.ROOT, "out", "ocr-fx"))
    ap.add_argument("--only", default="", help="comma-separated: cls, rec, det")
    ap.add_argument("--no_reduce_range", action="store_true", help="8-bit activation observers")
    ap.add_argument("--fold_affine", action="store_true",
                    help="fold scalar `* k + c` after a convolution into it before FX sees the model")
    ap.add_argument("--check", action="store_true",
                    help="print OK / FAIL per model (check()) and exit 1 on a FAIL")
    ap.add_argument("--report", default="", help="write the table from <out>/fx.jsonl to this file and stop")
    a = ap.parse_args()
    if a.report:
        rows = [json.loads(line) for line in open(os.path.join(a.out, "fx.jsonl"))]
        open(a.report, "w").write(report(rows))
        return 0
    if not a.qfuse_run:
        ap.error("give --qfuse_run (the --out folder of a run_ocr.py run)")
    common.setup_torch(0)
    warnings.filterwarnings("ignore", category=UserWarning)  # torch's deprecation notes on every observer
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "fbgemm" if "fbgemm" in engines else "onednn"
    keys = open(os.path.join(a.pkg, run_ocr.ASSETS, "ppocr_keys_v1.txt"), encoding="utf-8").read().splitlines()
    chars = ["<blank>"] + keys + [" "]
    os.makedirs(a.out, exist_ok=True)
    rows, failed = [], False
    with open(os.path.join(a.out, "fx.jsonl"), "w") as f:
        for name in run_ocr.MODELS:
            if a.only and name not in a.only.split(","):
                continue
            r = one_model(name, a.pkg, a.data, a.qfuse_run, chars, not a.no_reduce_range, a.fold_affine)
            r["engine"] = torch.backends.quantized.engine
            rows.append(r)
            f.write(json.dumps(r) + "\n")
            f.flush()
            if a.check:
                problems = check(r)
                failed |= bool(problems)
                print(f"FAIL fx-ocr {name}: " + "; ".join(problems) if problems else f"OK   fx-ocr {name}", flush=True)
            else:
                print(f"fx_ocr {name}: {json.dumps({k: r.get(k) for k in ('fx', 'qfuse_full', 'fx_error')})}",
                      flush=True)
    sys.stdout.write(report(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
