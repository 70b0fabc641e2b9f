"""Quantizes every model of the zoo with qfuse and checks each result in onnxruntime.

For every exported model under --zoo (<arch>/opset<N>.onnx, legacy_softmax/opset<N>.onnx,
<arch>_fmnist/opset<N>.onnx; with --with_norm also <arch>/norm-<kind>/model.onnx), with its calib.npy /
eval.npy (and eval_labels.idx where there is one):
  1. qfuse's float runtime against PyTorch's fp32 outputs (fp32_eval.npy): max |diff|;
  2. `tools/quantize` with default flags at full, bn and none (no per-layer analysis);
  3. every emitted int8 model run by qfuse's integer runtime and by onnxruntime on eval.npy:
     argmax agreement and cosine between the two (onnxruntime must load and run every file);
     with --targets, also the onnxruntime and tensorrt placements (`--target`), and for the
     onnxruntime ones tools/ort/integer_ops_check.js: every quantized Conv/Gemm/MatMul must
     become an integer kernel in onnxruntime's optimised graph;
  4. the PyTorch FX PTQ peer's numbers from the same folder's fx.json (models/zoo/fx_peer.py).
One JSON line per model goes to <out>/results.jsonl; `--report docs/zoo_tables.md` writes the
tables of one run, or of several (`--out DIR1,DIR2`: the zoo and the second zoo).

  python3 models/zoo/run_zoo.py --zoo out/zoo --out out/zoo-runs [--only resnet18,...]
  python3 models/zoo/run_zoo.py --out out/zoo-runs,out/zoo-extra-runs --report docs/zoo_tables.md
Needs `bazel build //tools:quantize //tools:run` (or `--bin DIR` with copies of both) and
`bash tools/ort/setup.sh` first.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUANTIZE = os.path.join(ROOT, "bazel-bin", "tools", "quantize", "quantize")
RUN = os.path.join(ROOT, "bazel-bin", "tools", "run")
ORT_COMPARE = os.path.join(ROOT, "models", "zoo", "ort_compare.js")
ORT_INTEGER_OPS = os.path.join(ROOT, "tools", "ort", "integer_ops_check.js")
LEVELS = ("full", "bn", "none")
ROW = re.compile(r"^((?:full|bn|none)(?:/[a-z]+)?)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+"
                 r"(\S+)\s+(\S+)\s+(\S+)\s*$")


def entries(zoo, only, with_norm):
    """(id, onnx path, data dir) of every exported model, sorted."""
    found = []
    norm = glob.glob(os.path.join(zoo, "*", "norm-*", "model.onnx")) if with_norm else []
    for path in sorted(glob.glob(os.path.join(zoo, "*", "opset*.onnx")) + norm):
        rel = os.path.relpath(path, zoo)
        arch = rel.split(os.sep)[0]
        if only and arch not in only:
            continue
        data = os.path.dirname(path)
        if not os.path.exists(os.path.join(data, "calib.npy")):
            continue
        found.append((rel[:-len(".onnx")].replace(os.sep, "/"), path, data))
    return found


def run(cmd, timeout=3600):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def last_error(stderr, stdout):
    """The tool's one-line error (stderr's `error: ...` line), else its last line of output."""
    errors = [l for l in stderr.splitlines() if l.startswith("error")]
    if errors:
        return errors[-1][:400]
    lines = [l for l in (stderr + "\n" + stdout).splitlines() if l.strip() and "ETA" not in l and "samples/s" not in l]
    return lines[-1][:400] if lines else "no output"


def read_f32(path, shape_like):
    return np.fromfile(path, dtype="<f4").reshape(shape_like.shape)


def check_fp32(model, data, work, samples):
    out = os.path.join(work, "qfuse_fp32.f32")
    rc, so, se, _ = run([RUN, f"--model={model}", f"--data={data}/eval.npy", f"--data_samples={samples}",
                         f"--save_outputs={out}"])
    if rc != 0:
        return {"error": last_error(se, so)}
    ref = np.load(os.path.join(data, "fp32_eval.npy")).astype(np.float32)[:samples]
    got = np.fromfile(out, dtype="<f4")
    if got.size != ref.size:
        return {"error": f"qfuse gave {got.size} values, PyTorch {ref.size}"}
    got = got.reshape(ref.shape)
    scale = float(np.abs(ref).max()) or 1.0
    return {"max_abs": float(np.abs(got - ref).max()), "max_rel": float(np.abs(got - ref).max()) / scale}


def quantize(model, data, work, samples, targets, extra=()):
    args = [QUANTIZE, f"--model={model}", f"--calib_data={data}/calib.npy", f"--eval_data={data}/eval.npy",
            f"--calib_samples={samples}", f"--eval_samples={samples}", "--analysis_samples=0", f"--output={work}",
            f"--target={targets}", *extra]
    labels = os.path.join(data, "eval_labels.idx")
    if os.path.exists(labels):
        args.append(f"--labels={labels}")
    rc, so, se, seconds = run(args)
    result = {"seconds": seconds}
    if rc != 0:
        result["error"] = last_error(se, so)
        return result
    rows = {}
    for line in so.splitlines():
        m = ROW.match(line)
        if m:
            g = m.groups()
            rows[g[0]] = {"top1": g[1], "agree": g[2], "sqnr_db": g[3], "cosine": g[4], "nodes": int(g[5]),
                          "q_acts": int(g[6]), "float_ops": int(g[7]),
                          "phase_s": dict(zip(("load", "fuse", "calib", "convert", "eval"), map(float, g[8:13])))}
    result["levels"] = rows
    result["notes"] = [l for l in so.splitlines() if ": node '" in l]
    report = json.load(open(os.path.join(work, "report.json")))
    result["fp32_top1"] = report["fp32"].get("top1")
    for level in report["levels"]:
        table = json.load(open(os.path.join(work, level["table_file"])))
        methods = {}
        for t in table["tensors"].values():
            m = t.get("method", table["method"])
            methods[m] = methods.get(m, 0) + 1
        name = level["level"] if level.get("target", "qfuse") == "qfuse" else f"{level['level']}/{level['target']}"
        rows.setdefault(name, {})["methods"] = methods
        rows[name]["outputs"] = level.get("outputs", [])
        rows[name]["model_file"] = level["model_file"]
    return result


def check_ort(int8_model, data, work, level, samples):
    out = os.path.join(work, f"qfuse_int8_{level.replace('/', '_')}.f32")
    rc, so, se, qseconds = run([RUN, f"--model={int8_model}", f"--data={data}/eval.npy", f"--data_samples={samples}",
                                f"--save_outputs={out}"])
    if rc != 0:
        return {"error": "qfuse: " + last_error(se, so)}
    rc, so, se, _ = run(["node", ORT_COMPARE, int8_model, f"{data}/eval.npy", out, str(samples)])
    try:
        r = json.loads(so.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "onnxruntime: " + last_error(se, so)}
    if "error" in r:
        r["error"] = "onnxruntime: " + r["error"]
    r["qfuse_s"] = qseconds
    if level.endswith("/onnxruntime") and "error" not in r:
        rc, so, se, _ = run(["node", ORT_INTEGER_OPS, int8_model])
        r["integer_ops"] = (so.strip() or se.strip())[:400]
        if rc != 0:
            r["error"] = "onnxruntime left quantized ops float: " + r["integer_ops"]
    return r


def fx_numbers(data):
    path = os.path.join(data, "fx.json")
    return json.load(open(path)) if os.path.exists(path) else None


def run_all(args):
    os.makedirs(args.out, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    results_path = os.path.join(args.out, "results.jsonl")
    done = set()
    if args.resume and os.path.exists(results_path):
        done = {json.loads(l)["id"] for l in open(results_path) if l.strip()}
    bad = 0
    with open(results_path, "a" if args.resume else "w") as results:
        for ident, model, data in entries(args.zoo, only, args.with_norm):
            if ident in done:
                continue
            work = os.path.join(args.out, ident)
            os.makedirs(work, exist_ok=True)
            # The main variant (opset 13, or the only one) gets every sample; the other opsets of
            # the same weights are checked on fewer (they quantize the same graph in another form).
            main = ident.endswith("/opset13") or "/" not in ident or not glob.glob(os.path.join(data, "opset13.onnx"))
            samples = args.samples if main else args.other_samples
            r = {"id": ident, "model": os.path.relpath(model, ROOT), "samples": samples}
            r["fp32_vs_torch"] = check_fp32(model, data, work, samples)
            r["quantize"] = quantize(model, data, work, samples, args.targets)
            r["ort"] = {}
            if "error" not in r["quantize"]:
                for level, row in r["quantize"]["levels"].items():
                    r["ort"][level] = check_ort(os.path.join(work, row["model_file"]), data, work, level, samples)
            r["fx"] = fx_numbers(data)
            # A tensorrt file is TensorRT's to run: onnxruntime must run it, but it fuses some of its
            # convolutions into its own integer kernels (quantizing the float bias itself), so its
            # outputs are not the simulated ones qfuse computes; its cosine is reported, not gated.
            ok = "error" not in r["quantize"] and all(
                "error" not in v and (l.endswith("/tensorrt") or v.get("cosine", 0) >= args.min_cosine)
                for l, v in r["ort"].items())
            bad += not ok
            results.write(json.dumps(r) + "\n")
            results.flush()
            q = r["quantize"]
            summary = q.get("error") or " ".join(f"{l}:{v.get('sqnr_db', '?')}dB" for l, v in q["levels"].items())
            ort = " ".join(f"{l}:{v.get('cosine', v.get('error', '?'))}" for l, v in r["ort"].items())
            print(f"{'OK  ' if ok else 'FAIL'} {ident} ({q['seconds']:.0f}s): {summary} | ort cos {ort}", flush=True)
    return bad


def fmt(v, digits=2):
    try:
        return f"{float(v):.{digits}f}"
    except (TypeError, ValueError):
        return "-" if v in (None, "") else str(v)


def phases(lv):
    """quantize's seconds per phase of one level: load / fuse / calibrate / convert / evaluate."""
    p = lv.get("phase_s") or {}
    return "/".join(fmt(p.get(k), 1) for k in ("load", "fuse", "calib", "convert", "eval")) if p else "-"


def write_report(args):
    runs = [d for d in args.out.split(",") if d]
    rows = []
    for d in runs:
        rows += [json.loads(l) for l in open(os.path.join(d, "results.jsonl")) if l.strip()]
    by_arch = {}
    for r in rows:
        by_arch.setdefault(r["id"].split("/")[0], []).append(r)
    run_cmds = " and ".join(f"`/usr/bin/python3 models/zoo/run_zoo.py --zoo ZOO --out {os.path.relpath(d, ROOT)}`"
                            for d in runs)
    out = ["# Model zoo tables", "",
           f"Generated by `/usr/bin/python3 models/zoo/run_zoo.py --out {','.join(os.path.relpath(d, ROOT) for d in runs)} "
           f"--report {os.path.relpath(args.report, ROOT)}` from {run_cmds}",
           "(ZOO: `out/zoo`, made by `bash models/zoo/make_zoo.sh`, and `out/zoo-extra`, the second zoo; see",
           "models/zoo/README.md for the models, data and the FX peer; docs/zoo.md for what the figures mean).",
           "Output SQNR and cosine are int8 vs fp32 over the evaluation samples (qfuse's integer runtime), default",
           "flags (`--method=auto`); opset 13 (or a model's only export) uses 64 calibration and 64 evaluation",
           "samples, the other opsets of the same weights 16 and 16. `median/sample` is the median of the",
           "per-sample SQNRs. `ORT cos` is the cosine between onnxruntime and qfuse running the same int8 file,",
           "`ORT bytes` whether every output value is the same float. `FX` is PyTorch FX PTQ (fbgemm qconfig,",
           "HistogramObserver) on the same weights and the same 64 calibration and evaluation samples, shown on",
           "the rows calibrated on those same samples. `auto picks` counts the method auto chose per tensor",
           "(`auto` there: an all-zero tensor, where every method agrees). `phases s` is quantize's time per",
           "phase of the level (load / fuse / calibrate / convert / evaluate, 2 threads); `quantize s` the whole",
           "command, three levels."] + ([args.note] if args.note else []) + [""]
    total = {"models": 0, "ok": 0, "quantized": 0, "ort_ran": 0, "full_ge_fx": 0, "fx": 0, "full_gt_none": 0,
             "full_ge_fx_median": 0, "fx_median": 0, "ort_bytes": 0, "int8_files": 0}
    for arch in sorted(by_arch):
        out += [f"## {arch}", "",
                "| variant | fp32 qfuse vs torch max rel | level | top-1 | SQNR dB | median/sample dB | cosine |"
                " float ops | auto picks | ORT cos | ORT argmax % | ORT bytes | FX SQNR dB | FX median/sample dB |"
                " phases s | quantize s |",
                "|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---|---:|"]
        for r in sorted(by_arch[arch], key=lambda r: r["id"]):
            total["models"] += 1
            variant = r["id"].split("/", 1)[1]
            q = r["quantize"]
            fp = r["fp32_vs_torch"]
            fp_cell = fp.get("error", fmt(fp.get("max_rel"), 6) if "max_rel" in fp else "-")
            fx = fx_numbers(os.path.dirname(os.path.join(ROOT, r["model"]))) or r.get("fx") or {}
            same_samples = fx.get("calib_samples") == r.get("samples", 64)
            fx_sqnr = fx.get("sqnr_db") if same_samples and fx.get("ok", True) else None
            fx_median = fx.get("median_sample_sqnr_db") if fx_sqnr is not None else None
            if "error" in q:
                out.append(f"| {variant} | {fp_cell} | - | - | error: {q['error']} | | | | | | | | {fmt(fx_sqnr)} | | | |")
                continue
            ok = True
            total["quantized"] += 1
            total["ort_ran"] += all("error" not in r["ort"].get(level, {"error": 1}) for level in LEVELS)
            for i, level in enumerate(LEVELS):
                lv = q["levels"].get(level, {})
                o = r["ort"].get(level, {})
                ok = ok and "error" not in o and o.get("cosine", 0) >= 0.999
                picks = ", ".join(f"{k} {v}" for k, v in sorted(lv.get("methods", {}).items()))
                median = (lv.get("outputs") or [{}])[0].get("median_sample_sqnr_db")
                same = o.get("max_abs")
                out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                    variant if i == 0 else "", fp_cell if i == 0 else "", level, lv.get("top1", "-"), lv.get("sqnr_db", "-"),
                    fmt(median), lv.get("cosine", "-"), lv.get("float_ops", "-"), picks,
                    o.get("error", fmt(o.get("cosine"), 5)), fmt(o.get("argmax_agree")),
                    "-" if same is None else ("yes" if same == 0 else f"no ({same:.3g})"),
                    fmt(fx_sqnr) if i == 0 else "", fmt(fx_median) if i == 0 else "", phases(lv),
                    fmt(q["seconds"], 0) if i == 0 else ""))
                total["ort_bytes"] += same == 0
                total["int8_files"] += 1
            total["ok"] += ok
            try:
                full = float(q["levels"]["full"]["sqnr_db"])
                total["full_gt_none"] += full > float(q["levels"]["none"]["sqnr_db"])
                if fx_sqnr is not None:
                    total["fx"] += 1
                    total["full_ge_fx"] += full >= fx_sqnr
                    full_median = (q["levels"]["full"].get("outputs") or [{}])[0].get("median_sample_sqnr_db")
                    if fx_median is not None and full_median is not None:
                        total["fx_median"] += 1
                        total["full_ge_fx_median"] += full_median >= fx_median
            except (KeyError, ValueError):
                pass
        out.append("")
    header_end = out.index("")  # the blank line after the header paragraph
    out[header_end + 1:header_end + 1] = [
        f"Summary over {total['models']} exported models (architecture x opset): {total['quantized']} quantized at "
        f"full, bn and none with default flags; onnxruntime loaded and ran every int8 file of {total['ort_ran']}; "
        f"onnxruntime and qfuse agree to cosine >= 0.999 at every level on {total['ok']}, and give the same bytes on "
        f"{total['ort_bytes']} of the {total['int8_files']} int8 files; `full` SQNR >= FX on "
        f"{total['full_ge_fx']} of the {total['fx']} with FX numbers on the same samples (median per-sample SQNR "
        f">= FX's on {total['full_ge_fx_median']} of {total['fx_median']}); `full` > `none` on "
        f"{total['full_gt_none']}.", ""]
    with open(args.report, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {args.report}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default=os.path.join(ROOT, "out", "zoo"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "zoo-runs"),
                    help="the run's folder (with --report, several comma-separated)")
    ap.add_argument("--only", default="", help="comma-separated arch names")
    ap.add_argument("--resume", action="store_true", help="skip models already in results.jsonl")
    ap.add_argument("--min_cosine", type=float, default=0.999,
                    help="OK needs this cosine between onnxruntime and qfuse on every int8 file")
    ap.add_argument("--samples", type=int, default=64, help="calibration and evaluation samples (opset 13)")
    ap.add_argument("--other_samples", type=int, default=16, help="samples for the other opset variants")
    ap.add_argument("--with_norm", action="store_true",
                    help="also the normalisation variants (method_sweep.py covers them at level full)")
    ap.add_argument("--report", default="", help="write the markdown tables from results.jsonl and stop")
    ap.add_argument("--note", default="", help="with --report: a line for the header (e.g. the commit of the run)")
    ap.add_argument("--bin", default="", help="folder with quantize and run (default: bazel-bin), so that a "
                    "long run is not changed by a rebuild")
    ap.add_argument("--targets", default="qfuse",
                    help="quantize's --target: qfuse, a comma list of qfuse/onnxruntime/tensorrt, or all")
    args = ap.parse_args()
    if args.bin:
        global QUANTIZE, RUN
        QUANTIZE = os.path.join(args.bin, "quantize")
        RUN = os.path.join(args.bin, "run")
    if args.report:
        write_report(args)
        return 0
    return 1 if run_all(args) else 0


if __name__ == "__main__":
    sys.exit(main())
