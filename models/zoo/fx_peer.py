"""PyTorch FX post-training quantization peer for the zoo.

  /usr/bin/python3 models/zoo/fx_peer.py --zoo out/zoo --arch resnet18 [--variant norm-pm1]
  /usr/bin/python3 models/zoo/fx_peer.py --zoo out/zoo --all
  /usr/bin/python3 models/zoo/fx_peer.py --zoo out/zoo --arch mobilenet_v3_small --no_reduce_range

Rebuilds the arch, loads <dir>/weights.pt (the exact weights exported to ONNX),
prepare_fx with get_default_qconfig_mapping('fbgemm') (HistogramObserver
activations with reduce_range, per-channel symmetric int8 weights), calibrates on
<dir>/calib.npy (first --calib_samples), convert_fx, runs <dir>/eval.npy and
compares with the fp32 model on the same inputs:
  SQNR = 10*log10(sum(ref^2) / sum((ref - q)^2)) over all output elements of all
  eval samples; cosine over everything flattened; top-1 agreement (argmax over the
  class axis; per pixel / per column for dense / sequence outputs); top-1 vs
  <dir>/eval_labels.idx when present. Writes <dir>/fx.json and prints one line.
This Debian torch has no fbgemm kernels, so the converted model runs on the
'onednn' (x86) engine, which executes the same quantized graph.
"""

import argparse
import copy
import os
import sys
import time
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archs  # noqa: E402
import common  # noqa: E402


def class_axis(kind):
    return -1 if kind == "sequence" else 1


def quantize(model, calib, qconfig_name, non_traceable=(), reduce_range=True):
    """reduce_range=False: 8-bit HistogramObserver activations instead of fbgemm's 7-bit ones.
    (fbgemm's observers fit each activation's range to 0..127 but store it as quint8 0..255,
    so every tensor holds about twice its calibrated maximum: coarser steps, and headroom for
    inputs beyond the calibration range. docs/zoo.md measures both.)"""
    from torch.ao.quantization import (HistogramObserver, QConfig, default_per_channel_weight_observer,
                                       get_default_qconfig_mapping)
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    from torch.ao.quantization.fx.custom_config import PrepareCustomConfig
    cfg = PrepareCustomConfig()
    if non_traceable:
        cfg.set_non_traceable_module_classes(list(non_traceable))
    example = (torch.from_numpy(calib[:1]),)
    mapping = get_default_qconfig_mapping(qconfig_name)
    if not reduce_range:
        mapping.set_global(QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                                   weight=default_per_channel_weight_observer))
    prepared = prepare_fx(copy.deepcopy(model), mapping, example, prepare_custom_config=cfg)
    with torch.no_grad():
        for i in range(0, len(calib), 16):
            prepared(torch.from_numpy(calib[i:i + 16]))
    return convert_fx(prepared)


def run_dir(zoo, arch, variant, calib_samples, reduce_range=True):
    d = os.path.join(zoo, arch, variant) if variant else os.path.join(zoo, arch)
    kind = "classification" if arch.endswith("_fmnist") else archs.ALL[arch].kind
    rec = {"arch": arch, "variant": variant or "", "kind": kind,
           "qconfig": "fbgemm" if reduce_range else "fbgemm, activations without reduce_range",
           "torch": torch.__version__}
    t0 = time.time()
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "fbgemm" if "fbgemm" in engines else "onednn"
    rec["engine"] = torch.backends.quantized.engine
    model = archs.build(arch)
    model.load_state_dict(torch.load(os.path.join(d, "weights.pt")))
    model.eval()
    calib = np.load(os.path.join(d, "calib.npy"))
    if calib_samples:
        calib = calib[:calib_samples]
    ev = np.load(os.path.join(d, "eval.npy"))
    rec.update(calib_samples=len(calib), eval_samples=len(ev))
    ref = common.run_batched(model, ev)
    saved = os.path.join(d, "fp32_eval.npy")
    if os.path.exists(saved):
        rec["fp32_vs_saved_max_abs"] = float(np.abs(np.load(saved) - ref).max())
    qmodel = None
    try:
        qmodel = quantize(model, calib, "fbgemm", reduce_range=reduce_range)
        rec["mode"] = "full FX graph"
    except Exception as e:  # noqa: BLE001 - FX cannot trace/quantize: record it
        rec["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:400])
        rec["error_where"] = traceback.format_exc().strip().splitlines()[-3][:300]
        if any(isinstance(m, torch.nn.MultiheadAttention) for m in model.modules()):
            try:
                qmodel = quantize(model, calib, "fbgemm", (torch.nn.MultiheadAttention,), reduce_range)
                rec["mode"] = "fallback: nn.MultiheadAttention non-traceable (kept fp32)"
            except Exception as e2:  # noqa: BLE001
                rec["fallback_error"] = "%s: %s" % (type(e2).__name__,
                                                    str(e2).strip().splitlines()[0][:400])
    if qmodel is not None:
        # float modules left with their own parameters (not quantized by FX)
        rec["fp32_modules"] = sorted({type(m).__name__ for m in qmodel.modules()
                                      if type(m).__module__.startswith("torch.nn.modules")
                                      and any(True for _ in m.parameters(recurse=False))})
        try:
            q = common.run_batched(qmodel, ev)
            ax = class_axis(kind)
            median, share = common.per_sample_sqnr(ref, q)
            rec.update(sqnr_db=round(common.sqnr_db(ref, q), 3),
                       median_sample_sqnr_db=round(median, 3), worst_sample_error_share=round(share, 4),
                       cosine=round(common.cosine(ref, q), 6),
                       top1_agreement=round(float(np.mean(ref.argmax(ax) == q.argmax(ax))), 4))
            lab = os.path.join(d, "eval_labels.idx")
            if os.path.exists(lab):
                labels = common.read_idx(lab).astype(np.int64)
                rec["top1_fp32"] = round(float(np.mean(ref.argmax(1) == labels)), 4)
                rec["top1_int8"] = round(float(np.mean(q.argmax(1) == labels)), 4)
        except Exception as e:  # noqa: BLE001 - the quantized model fails to run
            rec["run_error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:400])
            rec.pop("mode", None)
    rec["ok"] = "sqnr_db" in rec
    rec["seconds"] = round(time.time() - t0, 1)
    common.write_json(os.path.join(d, "fx.json" if reduce_range else "fx_no_reduce_range.json"), rec)
    name = arch + ("/" + variant if variant else "")
    if rec["ok"]:
        extra = (" top1 fp32 %.4f int8 %.4f" % (rec["top1_fp32"], rec["top1_int8"])
                 if "top1_fp32" in rec else "")
        print("fx %-40s SQNR %6.2f dB  cos %.5f  top1-agree %.4f%s%s" % (
            name, rec["sqnr_db"], rec["cosine"], rec["top1_agreement"], extra,
            "" if rec["mode"] == "full FX graph" else "  [" + rec["mode"] + "]"), flush=True)
    else:
        print("fx %-40s FAILED: %s" % (name, rec.get("error") or rec.get("run_error")), flush=True)
    return rec


def all_dirs(zoo):
    for arch in sorted(os.listdir(zoo)):
        d = os.path.join(zoo, arch)
        if not os.path.isdir(d):
            continue
        if os.path.exists(os.path.join(d, "weights.pt")):
            yield arch, ""
        for v in sorted(os.listdir(d)):
            if v.startswith("norm-") and os.path.exists(os.path.join(d, v, "weights.pt")):
                yield arch, v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zoo", default="out/zoo")
    ap.add_argument("--arch", default="")
    ap.add_argument("--variant", default="", help="e.g. norm-meanstd")
    ap.add_argument("--all", action="store_true", help="every arch and variant in --zoo")
    ap.add_argument("--calib_samples", type=int, default=0, help="0: all of calib.npy")
    ap.add_argument("--no_reduce_range", action="store_true",
                    help="8-bit activation observers (writes fx_no_reduce_range.json, not fx.json)")
    a = ap.parse_args()
    common.setup_torch(0)
    if a.all:
        t0 = time.time()
        n = 0
        for arch, variant in all_dirs(a.zoo):
            try:
                run_dir(a.zoo, arch, variant, a.calib_samples, not a.no_reduce_range)
            except Exception as e:  # noqa: BLE001 - keep going
                print("fx %s/%s: ERROR %s" % (arch, variant, e), flush=True)
            n += 1
        print("fx_peer: %d models in %.0f s" % (n, time.time() - t0))
    elif a.arch:
        run_dir(a.zoo, a.arch, a.variant, a.calib_samples, not a.no_reduce_range)
    else:
        ap.error("give --arch or --all")
    if not a.no_reduce_range:
        write_summary(a.zoo)


def write_summary(zoo):
    """<zoo>/fx_summary.json from every fx.json present."""
    summary = {}
    for arch, variant in all_dirs(zoo):
        p = os.path.join(zoo, arch, variant, "fx.json")
        if os.path.exists(p):
            rec = common.read_json(p)
            summary[arch + ("/" + variant if variant else "")] = {
                k: rec.get(k) for k in ("ok", "sqnr_db", "cosine", "top1_agreement", "top1_fp32",
                                        "top1_int8", "mode", "error")}
    common.write_json(os.path.join(zoo, "fx_summary.json"), summary)


if __name__ == "__main__":
    main()
