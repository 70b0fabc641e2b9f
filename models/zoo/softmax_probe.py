#!/usr/bin/env python3
"""Checks a model of onnxruntime's QLinearSoftmax arithmetic against onnxruntime itself.

For every DequantizeLinear -> Softmax -> QuantizeLinear group (UINT8) of an int8 file, runs the
file in onnxruntime (tools/ort's onnxruntime-node, all optimisations, so the group runs as
com.microsoft.QLinearSoftmax) on one sample, reads the group's uint8 input and output, and
recomputes the output with the arithmetic qfuse's runtime/int8/qlinear_softmax.cc implements:
a float32 exp table with shift max(0, log(FLT_MAX / D) - 5) / s_x, a float32 sum in axis order,
nearbyint(e * floor(1 / s_y) / S) + zp. Prints the values that differ, with the shift's
logarithm taken in float32 (as qfuse does) and in double. --tiny instead prints onnxruntime's
output for the three-node model of int8_ops_test's SoftmaxIsOnnxRuntimesQLinearSoftmax.

  /usr/bin/python3 models/zoo/softmax_probe.py --model M.onnx --data eval.npy [--sample K]
  /usr/bin/python3 models/zoo/softmax_probe.py --tiny
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUN_ORT = r"""
const fs = require('fs');
const ort = require(require.resolve('onnxruntime-node', {paths: [process.argv[1]]}));
(async () => {
  const [model, input, dims, out] = process.argv.slice(2);
  const buf = fs.readFileSync(input);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const sess = await ort.InferenceSession.create(model);
  const feeds = {}; feeds[sess.inputNames[0]] = new ort.Tensor(sess.inputNames[0] === 'x' ? 'uint8' : 'float32',
      sess.inputNames[0] === 'x' ? Uint8Array.from(data) : data, JSON.parse(dims));
  const r = await sess.run(feeds); const o = {};
  for (const k of sess.outputNames) o[k] = {dims: r[k].dims, data: Array.from(r[k].data)};
  fs.writeFileSync(out, JSON.stringify(o));
})().catch((e) => { console.error(e.message); process.exit(1); });
"""


def run_ort(model_path, values, dims, tmp):
    inp, out = os.path.join(tmp, "in.f32"), os.path.join(tmp, "out.json")
    np.asarray(values, np.float32).tofile(inp)
    subprocess.run(["node", "-e", RUN_ORT, os.path.join(ROOT, "tools", "ort"), model_path, inp, json.dumps(dims), out],
                   check=True, stderr=subprocess.DEVNULL)
    return json.load(open(out))


def softmax_model(x, x_scale, y_scale, zp):
    """qfuse's QLinearSoftmax over the last axis of uint8 x, with the shift's logarithm in float and in double."""
    d = x.shape[-1]
    results = {}
    for name, log in (("float log", lambda v: float(np.log(np.float32(v)))), ("double log", math.log)):
        shift = max(0.0, log(float(np.float32(np.finfo(np.float32).max) / np.float32(d))) - 5.0) / float(x_scale)
        table = np.array([np.float32(math.exp((i - 255 + shift) * float(x_scale))) for i in range(256)], np.float32)
        factor = np.floor(np.float32(1.0) / np.float32(y_scale)).astype(np.float32)
        rows = x.reshape(-1, d)
        y = np.empty_like(rows)
        for r, row in enumerate(rows):
            shifted = table[255 - int(row.max()):]
            total = np.float32(0)
            for v in row:
                total = np.float32(total + shifted[v])
            q = np.rint((shifted[row] * factor).astype(np.float32) / total).astype(np.int64) + zp
            y[r] = np.minimum(q, 255)
        results[name] = y.reshape(x.shape)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--data")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--tiny", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.tiny:
            inits = [numpy_helper.from_array(np.array(0.1, np.float32), "xs"), numpy_helper.from_array(np.array(0, np.uint8), "xz"),
                     numpy_helper.from_array(np.array(1 / 255, np.float32), "ys"), numpy_helper.from_array(np.array(0, np.uint8), "yz")]
            nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"]), helper.make_node("Softmax", ["xf"], ["p"], axis=-1),
                     helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["y"])]
            graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3])],
                                      [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 3])], inits)
            path = os.path.join(tmp, "tiny.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
            print("onnxruntime, x = [20, 10, 0], s_x = 0.1, s_y = 1/255:", run_ort(path, [20, 10, 0], [1, 3], tmp)["y"]["data"])
            return 0
        m = onnx.load(a.model)
        g = m.graph
        producer = {o: n for n in g.node for o in n.output}
        init = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        groups = []
        for n in g.node:
            if n.op_type != "Softmax":
                continue
            dq = producer.get(n.input[0])
            readers = [r for r in g.node if n.output[0] in r.input]
            if dq is None or dq.op_type != "DequantizeLinear" or len(readers) != 1 or readers[0].op_type != "QuantizeLinear":
                continue
            q = readers[0]
            if init[dq.input[2]].dtype != np.uint8 or init[q.input[2]].dtype != np.uint8:
                continue
            groups.append((dq.input[0], q.output[0], float(init[dq.input[1]]), float(init[q.input[1]]), int(init[q.input[2]])))
        del g.output[:]
        for x_name, y_name, *_ in groups:
            g.output.extend([helper.make_tensor_value_info(x_name, TensorProto.UINT8, None),
                             helper.make_tensor_value_info(y_name, TensorProto.UINT8, None)])
        path = os.path.join(tmp, "probe.onnx")
        onnx.save(m, path)
        data = np.load(a.data, mmap_mode="r")
        out = run_ort(path, np.ascontiguousarray(data[a.sample:a.sample + 1]).ravel(), [1, *data.shape[1:]], tmp)
        differ = {"float log": 0, "double log": 0}
        total = 0
        for x_name, y_name, xs, ys, zp in groups:
            x = np.array(out[x_name]["data"], np.uint8).reshape(out[x_name]["dims"])
            y = np.array(out[y_name]["data"], np.uint8).reshape(out[y_name]["dims"])
            total += y.size
            for name, model_y in softmax_model(x, xs, ys, zp).items():
                differ[name] += int((model_y != y).sum())
        print(json.dumps({"model": a.model, "sample": a.sample, "softmax_groups": len(groups), "values": total,
                          "differ_float_log": differ["float log"], "differ_double_log": differ["double log"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
