"""Quantizes the three PaddleOCR models with qfuse and scores each int8 file on the task.

Models nobody here made: paddle2onnx exports of PP-OCRv4's text detector (opset 11) and
recogniser (opset 9, SVTR-style attention) and the mobile direction classifier (opset 9), with
their trained weights (models/ocr/fetch_models.sh). Data: models/ocr/make_ocr_data.py. Per model:
  1. qfuse's float runtime against onnxruntime's on eval.npy (max |diff|, cosine);
  2. `tools/quantize` with default flags (method auto) at full, bn and none;
  3. every int8 file run by qfuse's integer runtime and by onnxruntime: max |diff| and cosine;
  4. the task's own score on fp32 and on each int8 file (qfuse's outputs): the recogniser's
     exact-match rate and character error rate against the rendered strings (CTC greedy
     decoding, PaddleOCR's dictionary), the classifier's accuracy, the detector's text-map IoU
     with fp32 (probability > 0.3, PaddleOCR's binarisation threshold);
  5. with --methods, the same at level full for each named calibration method.
One JSON line per model and method goes to <out>/results.jsonl; --report F writes the table.

  /usr/bin/python3 models/ocr/run_ocr.py [--pkg out/ocr/pkg] [--data out/ocr/data] [--out out/ocr-run]
      [--methods auto,entropy,percentile,mse,max] [--bin DIR]
Needs `bazel build //tools:quantize //tools:run` and `bash tools/ort/setup.sh` first.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
import run_zoo  # noqa: E402  (the quantize / onnxruntime helpers of the zoo run)

ASSETS = "package/assets"
MODELS = {  # name: (file, task)
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "classify"),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", "recognise"),
    "det": ("ch_PP-OCRv4_det_infer.onnx", "detect"),
}
DET_THRESHOLD = 0.3


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[len(b)]


def ctc_decode(probs, chars):
    """Greedy CTC (PaddleOCR's CTCLabelDecode): argmax per step, repeats merged, blanks dropped."""
    out = []
    for seq in probs.argmax(-1):
        s, prev = [], 0
        for t in seq:
            if t != 0 and t != prev:
                s.append(chars[t])
            prev = t
        out.append("".join(s).strip())
    return out


def task_score(name, outputs, data, fp32_outputs, chars):
    if name == "rec":
        truth = [t.strip() for t in json.load(open(os.path.join(data, "eval_text.json")))][:len(outputs)]
        got = ctc_decode(outputs, chars)
        errors = sum(edit_distance(g, t) for g, t in zip(got, truth))
        return {"exact_pct": 100.0 * sum(g == t for g, t in zip(got, truth)) / len(truth),
                "cer_pct": 100.0 * errors / sum(len(t) for t in truth)}
    if name == "cls":
        labels = run_zoo_labels(os.path.join(data, "eval_labels.idx"))[:len(outputs)]
        return {"accuracy_pct": 100.0 * float(np.mean(outputs.argmax(-1) == labels))}
    ref = fp32_outputs > DET_THRESHOLD
    got = outputs > DET_THRESHOLD
    union = np.logical_or(ref, got).sum()
    return {"text_pixels_pct": 100.0 * float(got.mean()),
            "iou_with_fp32": float(np.logical_and(ref, got).sum() / union) if union else 1.0}


def run_zoo_labels(path):
    raw = open(path, "rb").read()
    return np.frombuffer(raw[8:], np.uint8).astype(np.int64)


def qfuse_outputs(model, data, work, tag, samples):
    out = os.path.join(work, f"qfuse_{tag}.f32")
    rc, so, se, _ = run_zoo.run([run_zoo.RUN, f"--model={model}", f"--data={data}/eval.npy",
                                 f"--data_samples={samples}", f"--save_outputs={out}"])
    if rc != 0:
        return None, run_zoo.last_error(se, so)
    return out, None


def outputs_shape(path, samples, name):
    """The recogniser's [N, steps, classes]; the others flattened per sample."""
    y = np.fromfile(path, dtype="<f4")
    return y.reshape(samples, -1, 6625) if name == "rec" else y.reshape(samples, -1)


def one_model(name, model, data, work, samples, chars, method, targets="qfuse"):
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):  # no output of an earlier run is scored
        if f.endswith(".f32"):
            os.remove(os.path.join(work, f))
    rec = {"model": name, "file": os.path.basename(model), "method": method}
    fp32_path, err = qfuse_outputs(model, data, work, "fp32", samples)
    if err:
        rec["error"] = "qfuse fp32: " + err
        return rec
    rc, so, se, _ = run_zoo.run(["node", run_zoo.ORT_COMPARE, model, f"{data}/eval.npy", fp32_path, str(samples)])
    try:
        rec["fp32_vs_ort"] = json.loads(so.strip().splitlines()[-1])
    except (ValueError, IndexError):
        rec["fp32_vs_ort"] = {"error": run_zoo.last_error(se, so)}
    fp32 = outputs_shape(fp32_path, samples, name)
    rec["fp32_task"] = task_score(name, fp32, data, fp32, chars)
    extra = () if method == "auto" else (f"--method={method}", "--fusion=full")
    q = run_zoo.quantize(model, data, work, samples, targets if method == "auto" else "qfuse", extra)
    rec["quantize"] = q
    if "error" in q:
        return rec
    for level, row in q["levels"].items():
        path = os.path.join(work, row["model_file"])
        row["ort"] = run_zoo.check_ort(path, data, work, level, samples)
        got = os.path.join(work, f"qfuse_int8_{level}.f32")
        if "error" not in row["ort"] and os.path.exists(got):
            row["task"] = task_score(name, outputs_shape(got, samples, name), data, fp32, chars)
    return rec


def check_bars(r, min_cosine, samples):
    """What fails the CI bars: errors; fp32 or any int8 file off onnxruntime's output (cosine below
    min_cosine); at the default method, the task at full losing more than one sample in eight
    against fp32 (classifier accuracy, recogniser exact-match, at most +2 points of character
    error rate) or the detector's text map below IoU 0.85 with fp32's. Files of another deploy
    target (--targets, e.g. full/tensorrt) need only run in onnxruntime."""
    if "error" in r:
        return [r["error"]]
    if "error" in r["quantize"]:
        return ["quantize: " + r["quantize"]["error"]]
    problems = []
    fp32 = r.get("fp32_vs_ort", {})
    if "error" in fp32 or not fp32.get("cosine", 0) >= 0.99999:  # NaN fails
        problems.append(f"fp32 against onnxruntime: {fp32.get('error') or fp32.get('cosine')}")
    for level, row in r["quantize"]["levels"].items():
        ort = row.get("ort", {})
        if "/" in level:  # another deploy target's file (e.g. full/tensorrt): onnxruntime must run it
            if "error" in ort:
                problems.append(f"{level} in onnxruntime: {ort['error']}")
            continue
        if "error" in ort or not ort.get("cosine", 0) >= min_cosine:
            problems.append(f"{level} against onnxruntime: {ort.get('error') or ort.get('cosine')}")
    task = r["quantize"]["levels"].get("full", {}).get("task")
    if r["method"] != "auto" or task is None:
        return problems if task is not None or r["method"] != "auto" else problems + ["full: no task score"]
    slack = 100.0 / 8 + 1e-9
    ref = r["fp32_task"]
    if "accuracy_pct" in task and task["accuracy_pct"] < ref["accuracy_pct"] - slack:
        problems.append(f"full accuracy {task['accuracy_pct']:.2f}% against fp32's {ref['accuracy_pct']:.2f}%")
    if "exact_pct" in task and (task["exact_pct"] < ref["exact_pct"] - slack or task["cer_pct"] > ref["cer_pct"] + 2):
        problems.append(f"full exact-match {task['exact_pct']:.2f}% / CER {task['cer_pct']:.2f}% against fp32's "
                        f"{ref['exact_pct']:.2f}% / {ref['cer_pct']:.2f}%")
    if "iou_with_fp32" in task and task["iou_with_fp32"] < 0.85:
        problems.append(f"full text-map IoU with fp32 {task['iou_with_fp32']:.3f} < 0.85")
    return problems


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def write_report(out_dir, path):
    lines = ["| model | method | level | task score, fp32 -> int8 | output SQNR dB (median image) | "
             "float ops | qfuse vs onnxruntime: max abs, cosine | quantize s |", "|---|---|---|---|---:|---:|---|---:|"]
    for line in open(os.path.join(out_dir, "results.jsonl")):
        r = json.loads(line)
        if "error" in r or "error" in r["quantize"]:
            lines.append(f"| {r['model']} | {r['method']} | - | error: {r.get('error') or r['quantize']['error']} |"
                         " | | | |")
            continue
        for level, row in r["quantize"]["levels"].items():
            task = row.get("task", {})
            key = next(iter(r["fp32_task"]))
            score = f"{key} {fmt(r['fp32_task'][key])} -> {fmt(task.get(key))}"
            if "cer_pct" in task:
                score += f", CER % {fmt(r['fp32_task']['cer_pct'])} -> {fmt(task['cer_pct'])}"
            if "iou_with_fp32" in task:
                score = f"text-map IoU with fp32 {fmt(task['iou_with_fp32'], 3)}"
            outs = row.get("outputs") or [{}]
            median = outs[0].get("median_sample_sqnr_db")
            ort = row.get("ort", {})
            ort_s = ort.get("error") or f"{ort.get('max_abs', 0):.3g}, {fmt(ort.get('cosine'), 6)}"
            lines.append(f"| {r['model']} | {r['method']} | {level} | {score} | {row['sqnr_db']} ({fmt(median)}) | "
                         f"{row['float_ops']} | {ort_s} | {fmt(r['quantize']['seconds'], 1)} |")
    text = "\n".join(lines) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        open(path, "w").write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pkg", default=os.path.join(run_zoo.ROOT, "out", "ocr", "pkg"))
    ap.add_argument("--data", default=os.path.join(run_zoo.ROOT, "out", "ocr", "data"))
    ap.add_argument("--out", default=os.path.join(run_zoo.ROOT, "out", "ocr-run"))
    ap.add_argument("--samples", type=int, default=64, help="calibration and evaluation samples")
    ap.add_argument("--only", default="", help="comma-separated: cls, rec, det")
    ap.add_argument("--methods", default="", help="also quantize at full with these methods")
    ap.add_argument("--targets", default="qfuse",
                    help="deploy targets of the default-method run (quantize --target, e.g. qfuse,tensorrt); "
                         "another target's files need only run in onnxruntime")
    ap.add_argument("--report", default="", help="write the markdown table from results.jsonl (- : stdout) and stop")
    ap.add_argument("--check", action="store_true",
                    help="print OK / FAIL per model against the CI bars (check_bars) and exit 1 on a FAIL")
    ap.add_argument("--min_cosine", type=float, default=0.999,
                    help="with --check: least cosine between onnxruntime and qfuse on every int8 file")
    ap.add_argument("--bin", default="", help="a folder with other `quantize` and `run` binaries (before / after)")
    args = ap.parse_args()
    if args.bin:
        run_zoo.QUANTIZE = os.path.join(args.bin, "quantize")
        run_zoo.RUN = os.path.join(args.bin, "run")
    if args.report:
        write_report(args.out, args.report)
        return 0
    keys = open(os.path.join(args.pkg, ASSETS, "ppocr_keys_v1.txt"), encoding="utf-8").read().splitlines()
    chars = ["<blank>"] + keys + [" "]
    os.makedirs(args.out, exist_ok=True)
    failed = False
    with open(os.path.join(args.out, "results.jsonl"), "w") as results:
        for name, (file, _) in MODELS.items():
            if args.only and name not in args.only.split(","):
                continue
            model = os.path.join(args.pkg, ASSETS, file)
            for method in ["auto"] + [m for m in args.methods.split(",") if m and m != "auto"]:
                work = os.path.join(args.out, name if method == "auto" else f"{name}-{method}")
                r = one_model(name, model, os.path.join(args.data, name), work, args.samples, chars, method,
                              args.targets)
                results.write(json.dumps(r) + "\n")
                results.flush()
                problems = check_bars(r, args.min_cosine, args.samples)
                failed |= bool(problems) if (args.check or "error" in r) else any("error" in p for p in problems)
                if args.check:
                    print(f"FAIL ocr {name} {method}: " + "; ".join(problems) if problems else f"OK   ocr {name} {method}",
                          flush=True)
                else:
                    print(f"{name} {method}: " + ("; ".join(problems) if problems else "ok"), flush=True)
    write_report(args.out, "-")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
