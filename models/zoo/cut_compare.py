#!/usr/bin/env python3
"""Finds where onnxruntime and qfuse first differ inside an int8 model.

Cuts the model at each activation DequantizeLinear output, in graph order, and runs the cut
model on one sample in qfuse (bazel-bin/tools/run, integer kernels) and in onnxruntime
(models/zoo/ort_compare.js); prints the max |difference| at each cut point and stops after
--stop_after cut points that differ. With --optimization=basic (or disabled) onnxruntime
runs without its fusions (QLinearSoftmax, QLinearMatMul, ...): a difference that goes away
there is one of onnxruntime's fusions, one that stays is float rounding between the runtimes.

  /usr/bin/python3 models/zoo/cut_compare.py --model M.onnx --data eval.npy --sample 2 \\
      [--optimization all|extended|basic|disabled] [--stop_after 3]

Needs `bazel build //tools:run` and tools/ort's onnxruntime-node (tools/ort/setup.sh). The
cut model flattens the cut tensor to [1, n], so one sample runs at a time (any layout).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN = os.path.join(ROOT, "bazel-bin", "tools", "run")
ORT_COMPARE = os.path.join(ROOT, "models", "zoo", "ort_compare.js")


def cut_points(model):
    constants = {i.name for i in model.graph.initializer}
    constants |= {o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    return [n.output[0] for n in model.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0] not in constants]


def cut_at(model, tensor):
    cut = onnx.ModelProto()
    cut.CopyFrom(model)
    del cut.graph.output[:]
    shape = cut.graph.initializer.add()
    shape.CopyFrom(onnx.helper.make_tensor("cut_compare_shape", onnx.TensorProto.INT64, [2], [1, -1]))
    cut.graph.node.append(onnx.helper.make_node("Reshape", [tensor, "cut_compare_shape"], ["cut_compare_out"]))
    cut.graph.output.append(onnx.helper.make_tensor_value_info("cut_compare_out", onnx.TensorProto.FLOAT, [1, "n"]))
    return cut


def compare(cut_file, sample_file, qfuse_out, optimization):
    run = subprocess.run([RUN, f"--model={cut_file}", f"--data={sample_file}", f"--save_outputs={qfuse_out}"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return {"error": "qfuse: " + (run.stderr.strip().splitlines() or ["failed"])[-1]}
    ort = subprocess.run(["node", ORT_COMPARE, cut_file, sample_file, qfuse_out, "1", optimization],
                         capture_output=True, text=True)
    try:
        return json.loads(ort.stdout)
    except json.JSONDecodeError:
        return {"error": "onnxruntime: " + (ort.stderr.strip().splitlines() or ["failed"])[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="int8 ONNX model (Q/DQ)")
    ap.add_argument("--data", required=True, help="float32 .npy of samples, batch first")
    ap.add_argument("--sample", type=int, default=0, help="which sample of --data")
    ap.add_argument("--optimization", default="all", choices=["all", "extended", "basic", "disabled"],
                    help="onnxruntime's graph optimisation level")
    ap.add_argument("--stop_after", type=int, default=3, help="stop after this many differing cut points")
    args = ap.parse_args()
    for path in (args.model, args.data):
        if not os.path.exists(path):
            print(f"error: {path}: no such file", file=sys.stderr)
            return 2
    data = np.load(args.data, mmap_mode="r")
    if not 0 <= args.sample < data.shape[0]:
        print(f"error: {args.data}: no sample {args.sample} (it has {data.shape[0]})", file=sys.stderr)
        return 2
    model = onnx.load(args.model)
    points = cut_points(model)
    print(f"{args.model}: {len(points)} cut points, sample {args.sample}, onnxruntime at '{args.optimization}'")
    differing = 0
    with tempfile.TemporaryDirectory() as tmp:
        sample_file = os.path.join(tmp, "sample.npy")
        np.save(sample_file, np.ascontiguousarray(data[args.sample:args.sample + 1], dtype=np.float32))
        cut_file = os.path.join(tmp, "cut.onnx")
        for i, tensor in enumerate(points):
            onnx.save(cut_at(model, tensor), cut_file)
            result = compare(cut_file, sample_file, os.path.join(tmp, "qfuse.f32"), args.optimization)
            if "error" in result:
                print(f"{i:4d} {tensor}: {result['error']}")
                continue
            print(f"{i:4d} {tensor}: max |diff| {result['max_abs']:.9g}", flush=True)
            if result["max_abs"] > 0:
                differing += 1
                if differing >= args.stop_after:
                    break
    print("first difference: none" if differing == 0 else f"{differing} differing cut point(s) shown")
    return 0


if __name__ == "__main__":
    sys.exit(main())
