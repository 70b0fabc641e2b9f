"""Quantizes IS-Net (IMG.LY's background-removal model, models/bgremoval/fetch_model.sh) with
qfuse and scores it on the task, against the float model and against the package's own int8
form (onnxruntime's dynamic quantization of the same weights, "small").

A model nobody here made, trained, as a user gets it: float16 (keep_io_types), 1024x1024, with
side outputs. Per run, on eval.npy (models/bgremoval/make_data.py):
  1. qfuse's float runtime (the float16 model imported as float32) against onnxruntime running
     the float16 file as shipped and a float32 copy this script writes with onnx's Python API;
  2. `tools/quantize` with default flags at full, bn and none, calibrated on calib.npy;
  3. every int8 file run by qfuse's integer runtime and by onnxruntime (max |diff|, cosine);
  4. with --methods, each other calibration method at level full;
  5. the task, on the mask ("output", 1024x1024 in [0, 1]): IoU of the foreground (> 0.5) with
     float32's, and the mean |alpha| difference in the package's 0-255 units; the same for the
     package's int8 model run by onnxruntime.
Writes <out>/results.json and prints the table (docs/zoo.md quotes it).

  /usr/bin/python3 models/bgremoval/run_bgremoval.py [--pkg out/bgremoval/pkg] [--data out/bgremoval/data]
      [--out out/bgremoval/run] [--bin DIR] [--calib_samples 16] [--eval_samples N] [--methods auto,entropy,...]
Needs `bazel build //tools:quantize //tools:run` (or --bin) and `bash tools/ort/setup.sh` first.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
import common  # noqa: E402
import run_zoo  # noqa: E402  (the quantize / onnxruntime helpers of the zoo run)

SIZE = 1024


def float32_copy(src, dst):
    """The float16 model with every FLOAT16 tensor, Cast target and type made FLOAT (numpy)."""
    m = onnx.load(src)
    f16, f32 = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT
    for t in m.graph.initializer:
        if t.data_type == f16:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name))
    for n in m.graph.node:
        for a in n.attribute:
            if a.name == "to" and a.i == f16:
                a.i = f32
            if a.HasField("t") and a.t.data_type == f16:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float32), a.t.name))
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        if vi.type.tensor_type.elem_type == f16:
            vi.type.tensor_type.elem_type = f32
    tmp = dst + ".tmp"
    onnx.save(m, tmp)
    os.replace(tmp, dst)


def masks(path, samples):
    return np.fromfile(path, dtype="<f4").reshape(samples, SIZE, SIZE)


SUBJECT_PCT = 1.0  # images whose float32 mask is at least this % foreground count as having a subject


def task(ref, got):
    """Foreground IoU (> 0.5) with the float mask, over all pixels of all images; per image over the
    images with a subject (>= SUBJECT_PCT % foreground in float32): the median and the least IoU and
    how many fall below 0.9; mean |alpha| difference in 0-255 units (the package rounds mask * 255
    to uint8); output SQNR (dB) over all samples."""
    a, b = ref > 0.5, got > 0.5
    union = np.logical_or(a, b).sum()
    to_u8 = lambda m: np.clip(np.round(m * 255.0), 0, 255)  # noqa: E731
    per_image = []
    for i in range(len(ref)):
        if 100.0 * a[i].mean() >= SUBJECT_PCT:
            per_image.append(float(np.logical_and(a[i], b[i]).sum() / np.logical_or(a[i], b[i]).sum()))
    return {"iou_with_fp32": float(np.logical_and(a, b).sum() / union) if union else 1.0,
            "subject_images": len(per_image),
            "median_image_iou": float(np.median(per_image)) if per_image else None,
            "least_image_iou": min(per_image) if per_image else None,
            "images_below_0.9_iou": sum(v < 0.9 for v in per_image),
            "per_image_iou": [round(v, 4) for v in per_image],
            "alpha_mae_255": float(np.mean(np.abs(to_u8(ref) - to_u8(got)))),
            "sqnr_db": float(common.sqnr_db(ref, got)),
            "foreground_pct_fp32": 100.0 * float(a.mean())}


def ort_run(model, data, qfuse_out, samples, save):
    env = dict(os.environ, ORT_SAVE=save)
    p = subprocess.run(["node", run_zoo.ORT_COMPARE, model, data, qfuse_out, str(samples)], capture_output=True,
                       text=True, env=env)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": run_zoo.last_error(p.stderr, p.stdout)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pkg", default="out/bgremoval/pkg")
    ap.add_argument("--data", default="out/bgremoval/data")
    ap.add_argument("--out", default="out/bgremoval/run")
    ap.add_argument("--bin", default="", help="folder with quantize and run (default: bazel-bin)")
    ap.add_argument("--calib_samples", type=int, default=16)
    ap.add_argument("--eval_samples", type=int, default=0, help="evaluation images (0: all of eval.npy)")
    ap.add_argument("--methods", default="auto", help="also these calibration methods at level full, e.g. "
                    "auto,entropy,percentile,mse,max")
    args = ap.parse_args()
    if args.bin:
        run_zoo.QUANTIZE = os.path.join(args.bin, "quantize")
        run_zoo.RUN = os.path.join(args.bin, "run")
    os.makedirs(args.out, exist_ok=True)
    os.environ["ORT_BATCH"] = "1"  # the model's batch is fixed at 1 (models/zoo/ort_compare.js)
    eval_npy = os.path.join(args.data, "eval.npy")
    n = args.eval_samples or int(np.load(eval_npy, mmap_mode="r").shape[0])
    model = os.path.join(args.pkg, "isnet_fp16.onnx")
    fp32_copy = os.path.join(args.out, "isnet_fp32_numpy.onnx")
    float32_copy(model, fp32_copy)
    r = {"model": model, "eval_samples": n, "calib_samples": args.calib_samples}

    fp32 = os.path.join(args.out, "qfuse_fp32.f32")
    rc, so, se, secs = run_zoo.run([run_zoo.RUN, f"--model={model}", f"--data={eval_npy}", f"--data_samples={n}",
                                    f"--save_outputs={fp32}"])
    if rc != 0:
        sys.exit("qfuse fp32: " + run_zoo.last_error(se, so))
    r["fp32_vs_ort_float16_file"] = ort_run(model, eval_npy, fp32, n, os.path.join(args.out, "ort_fp16.f32"))
    r["fp32_vs_ort_float32_copy"] = ort_run(fp32_copy, eval_npy, fp32, n, os.path.join(args.out, "ort_fp32.f32"))
    ref = masks(fp32, n)
    r["ort_float16_file_task"] = task(ref, masks(os.path.join(args.out, "ort_fp16.f32"), n))

    q = run_zoo.quantize(model, args.data, args.out, n, "qfuse", (f"--calib_samples={args.calib_samples}",))
    r["quantize"] = q
    if "error" not in q:
        for level, row in q["levels"].items():
            row["ort"] = run_zoo.check_ort(os.path.join(args.out, row["model_file"]), args.data, args.out, level, n)
            got = os.path.join(args.out, f"qfuse_int8_{level}.f32")
            if os.path.exists(got):
                row["task"] = task(ref, masks(got, n))
    # Other calibration methods, at level full (--methods).
    r["methods"] = {}
    for method in [m for m in args.methods.split(",") if m and m != "auto"]:
        work = os.path.join(args.out, f"method-{method}")
        os.makedirs(work, exist_ok=True)
        mq = run_zoo.quantize(model, args.data, work, n, "qfuse",
                              (f"--calib_samples={args.calib_samples}", f"--method={method}", "--fusion=full"))
        if "error" not in mq:
            row = mq["levels"]["full"]
            rc, so, se, _ = run_zoo.run([run_zoo.RUN, f"--model={os.path.join(work, row['model_file'])}",
                                         f"--data={eval_npy}", f"--data_samples={n}",
                                         f"--save_outputs={os.path.join(work, 'qfuse_int8_full.f32')}"])
            if rc == 0:
                row["task"] = task(ref, masks(os.path.join(work, "qfuse_int8_full.f32"), n))
        r["methods"][method] = mq
    peer = os.path.join(args.pkg, "isnet_quint8_dynamic.onnx")
    r["peer_ort_dynamic"] = ort_run(peer, eval_npy, fp32, n, os.path.join(args.out, "ort_dynamic.f32"))
    if "error" not in r["peer_ort_dynamic"]:
        r["peer_ort_dynamic"]["task"] = task(ref, masks(os.path.join(args.out, "ort_dynamic.f32"), n))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(r, f, indent=1)

    print(f"{n} evaluation images, {r['ort_float16_file_task']['subject_images']} with a subject "
          f"(>= {SUBJECT_PCT:g}% foreground in float32)")
    print("| model | foreground IoU with fp32 | median image IoU | least image IoU | images below 0.9 | "
          "mean abs alpha diff (0-255) | mask SQNR dB | float ops | qfuse vs onnxruntime (max abs, cosine) | "
          "quantize s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")

    def cells(t):
        if not t:
            return "no output | | | | | "
        fmt = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        return (f"{t['iou_with_fp32']:.4f} | {fmt(t['median_image_iou'])} | {fmt(t['least_image_iou'])} | "
                f"{t['images_below_0.9_iou']} | {t['alpha_mae_255']:.3f} | {t['sqnr_db']:.2f}")

    if "error" in q:
        print(f"| qfuse | error: {q['error']} | | | | | | | | |")
    else:
        for level, row in q["levels"].items():
            o = row.get("ort", {})
            ort_s = o.get("error") or f"{o.get('max_abs', 0):.3g}, {o.get('cosine', 0):.6f}"
            print(f"| qfuse int8 `{level}` | {cells(row.get('task'))} | {row['float_ops']} | {ort_s} | "
                  f"{row['phase_s']['calib'] + row['phase_s']['convert'] + row['phase_s']['eval']:.0f} |")
    for method, mq in r["methods"].items():
        t = mq.get("levels", {}).get("full", {}).get("task")
        print(f"| qfuse int8 `full`, --method={method} | {cells(t)} | | | |" if t else
              f"| qfuse int8 `full`, --method={method} | error: {mq.get('error', 'no output')} | | | | | | | | |")
    p = r["peer_ort_dynamic"]
    if "error" in p:
        print(f"| IMG.LY's int8 (onnxruntime dynamic) | error: {p['error']} | | | | | | | | |")
    else:
        print(f"| IMG.LY's int8 (onnxruntime dynamic), onnxruntime | {cells(p['task'])} | - | - | - |")
    print(f"| the float16 file, onnxruntime | {cells(r['ort_float16_file_task'])} | - | - | - |")
    c = r["fp32_vs_ort_float32_copy"]
    print(f"qfuse fp32 against onnxruntime on the float32 copy: max abs {c.get('max_abs')}, cosine {c.get('cosine')}")


if __name__ == "__main__":
    main()
