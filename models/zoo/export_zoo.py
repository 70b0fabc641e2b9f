"""Exports the zoo's architectures to ONNX with real-image BN statistics.

  /usr/bin/python3 models/zoo/export_zoo.py --out out/zoo [--archs a,b] [--size 128] [--quick]

Per arch, into <out>/<arch>/: opset{9,11,13,17}.onnx (dynamic batch, and H/W where
the arch allows), weights.pt (state_dict after BN statistics), calib.npy / eval.npy
(float32 NCHW, ImageNet mean/std), fp32_eval.npy (PyTorch outputs on eval.npy) and
export.json (per-opset success / error, onnx.checker result, op types).
The architectures in archs.NORM_SWEEP (all but legacy_softmax) also get norm-<kind>/
variants (opset 13).
legacy_softmax is post-processed so that ONNX shape inference cannot know the
rank of its Softmax input (see legacy_softmax_unknown_rank below).
"""

import argparse
import functools
import os
import sys
import time

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import archs  # noqa: E402
import common  # noqa: E402


@functools.lru_cache(maxsize=None)
def images(split, n, h, w, kind):
    return common.image_set(split, n, h, w, kind)


def prepare(name, hw, kind, n_bn):
    model = archs.build(name)
    model, n_layers = common.estimate_bn_stats(model, images("bn", n_bn, hw[0], hw[1], kind))
    return model, n_layers


def write_data(model, d, hw, kind, n_calib, n_eval):
    calib = images("calib", n_calib, hw[0], hw[1], kind)
    ev = images("eval", n_eval, hw[0], hw[1], kind)
    np.save(os.path.join(d, "calib.npy"), calib)
    np.save(os.path.join(d, "eval.npy"), ev)
    ref = common.run_batched(model, ev)
    np.save(os.path.join(d, "fp32_eval.npy"), ref)
    return ref


def export_one(model, name, example, path, opset):
    """Returns the export record for one opset; failures are recorded, not raised."""
    rec = {"opset": opset}
    try:
        common.export_onnx(model, example, path, opset, archs.dynamic_axes(name))
    except Exception as e:  # noqa: BLE001 - torch cannot export: record and move on
        rec.update(ok=False, error="%s: %s" % (type(e).__name__, str(e).strip()[:600]))
        if os.path.exists(path):
            os.remove(path)
        return rec
    m = onnx.load(path)
    rec.update(ok=True, file=os.path.basename(path), checker=common.check_onnx(path),
               nodes=len(m.graph.node), ir_version=m.ir_version,
               op_types=sorted({n.op_type for n in m.graph.node}))
    return rec


def _const(name, values):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(values, np.int64), name + "_v"))


def legacy_softmax_unknown_rank(path, opset):
    """Rewrites the shape input of the Reshape feeding Softmax so that its length
    (hence the Softmax input's rank) is computed at run time: it keeps all but the
    last three dims of the input ('flatten C,H,W, keep any leading dims'), as
      opset >= 10: Slice(Shape(x), [0], Sub(Shape(Shape(x)), [3])) ++ [-1]
      opset 9    : Gather(Shape(x), ConstantOfShape(Sub(Shape(Shape(x)), [3]))) ++ [-1]
    For the 4-D input both equal [N, -1], so the model computes the same values.
    Also drops exporter-written value_info, then prunes dead nodes."""
    m = onnx.load(path)
    g = m.graph
    sm = next(n for n in g.node if n.op_type == "Softmax")
    rs = next(n for n in g.node if n.output[0] == sm.input[0])
    assert rs.op_type == "Reshape", rs.op_type
    x = rs.input[0]
    p = "legacy_flatten_"
    new = [helper.make_node("Shape", [x], [p + "shape"]),
           helper.make_node("Shape", [p + "shape"], [p + "rank"]),
           _const(p + "three", [3]),
           helper.make_node("Sub", [p + "rank", p + "three"], [p + "nlead"])]
    if opset >= 10:
        new += [_const(p + "zero", [0]),
                helper.make_node("Slice", [p + "shape", p + "zero", p + "nlead"], [p + "lead"])]
    else:
        new += [helper.make_node("ConstantOfShape", [p + "nlead"], [p + "idx"],
                                 value=numpy_helper.from_array(np.zeros(1, np.int64))),
                helper.make_node("Gather", [p + "shape", p + "idx"], [p + "lead"], axis=0)]
    new += [_const(p + "minus1", [-1]),
            helper.make_node("Concat", [p + "lead", p + "minus1"], [p + "target"], axis=0)]
    rs.input[1] = p + "target"
    idx = list(g.node).index(rs)
    for i, n in enumerate(new):
        g.node.insert(idx + i, n)
    # prune nodes whose outputs are no longer used
    while True:
        used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
        dead = [n for n in g.node if not any(o in used for o in n.output)]
        if not dead:
            break
        for n in dead:
            g.node.remove(n)
    del g.value_info[:]
    onnx.save(m, path)
    return describe_softmax_input(path)


def describe_softmax_input(path):
    """What onnx.shape_inference.infer_shapes says about the Softmax input."""
    m = onnx.load(path)
    res = {}
    for data_prop in (False, True):
        inf = shape_inference.infer_shapes(m, data_prop=data_prop)
        sm = next(n for n in inf.graph.node if n.op_type == "Softmax")
        vi = [v for v in inf.graph.value_info if v.name == sm.input[0]]
        if not vi:
            desc = "no value_info (type and rank unknown)"
        elif not vi[0].type.tensor_type.HasField("shape"):
            desc = "elem_type %d, shape UNKNOWN (rank unknown)" % vi[0].type.tensor_type.elem_type
        else:
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in vi[0].type.tensor_type.shape.dim]
            desc = "rank %d known: %s" % (len(dims), dims)
        res["data_prop=%s" % data_prop] = desc
    return res


def export_arch(name, a, out, opsets):
    t0 = time.time()
    hw = archs.input_hw(name, a.size)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    model, n_bn_layers = prepare(name, hw, "meanstd", a.bn_n)
    torch.save(model.state_dict(), os.path.join(d, "weights.pt"))
    write_data(model, d, hw, "meanstd", a.calib_n, a.eval_n)
    example = torch.from_numpy(images("calib", a.calib_n, hw[0], hw[1], "meanstd")[:1])
    info = {"arch": name, "kind": archs.ALL[name].kind, "input_hw": list(hw),
            "dynamic_axes": {k: {str(i): v for i, v in ax.items()}
                             for k, ax in archs.dynamic_axes(name).items()},
            "normalisation": "meanstd", "bn_stat_samples": a.bn_n if n_bn_layers else 0,
            "bn_layers": n_bn_layers, "calib_samples": a.calib_n, "eval_samples": a.eval_n,
            "torch": torch.__version__, "onnx": onnx.__version__, "opsets": {}}
    for opset in [o for o in archs.ALL[name].opsets if o in opsets]:
        path = os.path.join(d, "opset%d.onnx" % opset)
        rec = export_one(model, name, example, path, opset)
        if rec["ok"] and name == "legacy_softmax":
            rec["softmax_input_as_exported"] = desc = describe_softmax_input(path)
            rec["rewritten"] = any("known" in v and "unknown" not in v for v in desc.values())
            if rec["rewritten"] or a.force_rewrite:
                rec["rewritten"] = True
                rec["softmax_input_after_rewrite"] = legacy_softmax_unknown_rank(path, opset)
                rec["checker"] = common.check_onnx(path)
            print("  legacy_softmax opset%d Softmax input (onnx.shape_inference): %s%s" % (
                opset, desc, ("; after rewrite %s" % rec["softmax_input_after_rewrite"])
                if rec["rewritten"] else " (no rewrite needed)"))
        info["opsets"][str(opset)] = rec
        print("  %s opset%d: %s" % (name, opset, ("ok, checker " + rec["checker"]) if rec["ok"]
                                    else "FAILED " + rec["error"][:200]), flush=True)
    info["exported"] = [int(k) for k, r in info["opsets"].items() if r["ok"]]
    info["failed"] = [int(k) for k, r in info["opsets"].items() if not r["ok"]]
    if name in archs.NORM_SWEEP and not a.no_norm_sweep:
        info["norm_variants"] = [norm_variant(name, a, d, hw, k) for k in common.NORM_KINDS]
    info["seconds"] = round(time.time() - t0, 1)
    common.write_json(os.path.join(d, "export.json"), info)
    return info


def norm_variant(name, a, d, hw, kind):
    vd = os.path.join(d, "norm-" + kind)
    os.makedirs(vd, exist_ok=True)
    model, _ = prepare(name, hw, kind, a.bn_n)
    torch.save(model.state_dict(), os.path.join(vd, "weights.pt"))
    write_data(model, vd, hw, kind, a.calib_n, a.eval_n)
    example = torch.from_numpy(images("calib", a.calib_n, hw[0], hw[1], kind)[:1])
    rec = export_one(model, name, example, os.path.join(vd, "model.onnx"), 13)
    if rec["ok"]:
        rec["file"] = "model.onnx"
    rec.update(arch=name, normalisation=kind, input_hw=list(hw))
    common.write_json(os.path.join(vd, "export.json"), rec)
    print("  %s norm-%s: %s" % (name, kind, "ok" if rec["ok"] else "FAILED"), flush=True)
    return "norm-" + kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out/zoo")
    ap.add_argument("--archs", default="", help="comma-separated names of archs.ARCHS (default: all) or archs.EXTRA")
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--opsets", default="9,11,13,17")
    ap.add_argument("--calib_n", type=int, default=64)
    ap.add_argument("--eval_n", type=int, default=64)
    ap.add_argument("--bn_n", type=int, default=256)
    ap.add_argument("--no_norm_sweep", action="store_true")
    ap.add_argument("--force_rewrite", action="store_true",
                    help="apply the legacy_softmax shape rewrite even if not needed")
    ap.add_argument("--quick", action="store_true",
                    help="CI subset: resnet18, mobilenet_v3_small, legacy_softmax; "
                         "opsets 11,13; 16+16 samples; size 64; no sweep")
    a = ap.parse_args()
    if a.quick:
        a.archs = a.archs or "resnet18,mobilenet_v3_small,legacy_softmax"
        a.opsets, a.calib_n, a.eval_n, a.bn_n, a.size = "11,13", 16, 16, 64, 64
        a.no_norm_sweep = True
    common.setup_torch(0)
    names = a.archs.split(",") if a.archs else list(archs.ARCHS)
    opsets = [int(o) for o in a.opsets.split(",")]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    spath = os.path.join(a.out, "export_summary.json")
    summary = common.read_json(spath) if os.path.exists(spath) else {}
    for name in names:
        print("[%s]" % name, flush=True)
        try:
            info = export_arch(name, a, a.out, opsets)
        except Exception as e:  # noqa: BLE001 - keep going with the other archs
            print("  %s: FAILED before export: %s" % (name, e), flush=True)
            summary[name] = {"error": "%s: %s" % (type(e).__name__, e)}
            continue
        summary[name] = {"exported": info["exported"], "failed": {
            k: r["error"][:300] for k, r in info["opsets"].items() if not r["ok"]},
            "seconds": info["seconds"]}
    common.write_json(spath, summary)
    print("export_zoo: %d archs in %.0f s" % (len(names), time.time() - t0))


if __name__ == "__main__":
    main()
