#!/usr/bin/env python3
"""Checks qfuse's float32 Resize in mode linear against onnxruntime's, value for value.

The zoo's segmentation nets end in DequantizeLinear -> Resize(linear) -> output, so the
output is whatever float the Resize rounds to; qfuse computes it as onnxruntime 1.30's
bilinear kernel does (runtime/kernels/shape/resize_bilinear.h). The script writes one
Resize model per case: upsampling by 2, 4 and 8, 16 -> 128 and 7 -> 64 with sizes given,
non-integer and downsampling factors, axes of size 1, in each coordinate mode
(half_pixel, pytorch_half_pixel, align_corners, asymmetric), as Resize-13 and Resize-11
with sizes or scales and as Upsample-9 (scales). Inputs are the formula of
tests/runtime/kernels/shape/resize_bilinear_test.cc. Runs each in qfuse
(bazel-bin/tools/run) and in onnxruntime (tools/ort's onnxruntime-node via
models/zoo/ort_compare.js, graph optimisation 'all' and 'disabled') and prints
max |qfuse - onnxruntime| per case; 0 means every value is the same float. The cases marked
"ONNX form" (align_corners with scales whose product with the input size is not an integer)
differ on purpose: there onnxruntime departs from ONNX, and qfuse follows ONNX's own test.

  /usr/bin/python3 models/zoo/resize_probe.py [--keep DIR] [--test_rows]

--test_rows prints, instead, the C++ rows of resize_bilinear_test: per test case the output
positions where plausible other arithmetic (products summed in pairs, fused multiply-adds,
two 1-D passes, lerp form, coordinates in double) differs from onnxruntime, with
onnxruntime's own output bits there.
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
ROOT = os.path.dirname(ROOT)
f32 = np.float32
MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")

# (name, input [N, C, H, W], {"sizes": [...]} or {"scales": [...]}, mode, opset); opset 9 is Upsample.
CASES = []
for _mode in MODES:
    CASES += [
        (f"{_mode}_16_to_128", [1, 2, 16, 16], {"sizes": [1, 2, 128, 128]}, _mode, 13),
        (f"{_mode}_7_to_64", [1, 2, 7, 7], {"sizes": [1, 2, 64, 64]}, _mode, 13),
        (f"{_mode}_x2", [1, 3, 12, 10], {"scales": [1, 1, 2, 2]}, _mode, 13),
        (f"{_mode}_x4", [1, 2, 9, 9], {"scales": [1, 1, 4, 4]}, _mode, 13),
        (f"{_mode}_x8", [1, 1, 8, 6], {"scales": [1, 1, 8, 8]}, _mode, 11),
        (f"{_mode}_5x9_to_17x40", [1, 2, 5, 9], {"sizes": [1, 2, 17, 40]}, _mode, 11),
        (f"{_mode}_x1.7x3.3", [1, 2, 10, 12], {"scales": [1, 1, 1.7, 3.3]}, _mode, 13),
        (f"{_mode}_down_30_to_7x11", [1, 2, 30, 30], {"sizes": [1, 2, 7, 11]}, _mode, 13),
        (f"{_mode}_down_x0.7", [1, 2, 10, 10], {"scales": [1, 1, 0.7, 0.7]}, _mode, 13),
        (f"{_mode}_6x1_to_13x1", [1, 2, 6, 1], {"sizes": [1, 2, 13, 1]}, _mode, 13),
        (f"{_mode}_1x5_to_1x20", [1, 2, 1, 5], {"sizes": [1, 2, 1, 20]}, _mode, 13),
        (f"{_mode}_7_to_1", [1, 1, 7, 7], {"sizes": [1, 1, 1, 1]}, _mode, 13),
        (f"{_mode}_64x48_to_520", [1, 2, 64, 48], {"sizes": [1, 2, 520, 520]}, _mode, 13),
    ]
CASES += [
    ("upsample9_x2", [1, 3, 12, 10], {"scales": [1, 1, 2, 2]}, "asymmetric", 9),
    ("upsample9_x4.5", [1, 2, 7, 7], {"scales": [1, 1, 4.5, 4.5]}, "asymmetric", 9),
    ("upsample9_x8", [1, 1, 8, 6], {"scales": [1, 1, 8, 8]}, "asymmetric", 9),
]
# The cases resize_bilinear_test holds (one channel each, to keep its rows short).
TEST_CASES = [
    ("half_pixel_16_to_128", [1, 1, 16, 16], {"sizes": [1, 1, 128, 128]}, "half_pixel", 13),
    ("half_pixel_7_to_64", [1, 1, 7, 7], {"sizes": [1, 1, 64, 64]}, "half_pixel", 13),
    ("half_pixel_down_30_to_7x11", [1, 1, 30, 30], {"sizes": [1, 1, 7, 11]}, "half_pixel", 13),
    ("half_pixel_6x1_to_13x1", [1, 1, 6, 1], {"sizes": [1, 1, 13, 1]}, "half_pixel", 13),
    ("half_pixel_down_x0.7", [1, 1, 10, 10], {"scales": [1, 1, 0.7, 0.7]}, "half_pixel", 13),
    ("pytorch_half_pixel_x2", [1, 1, 12, 10], {"scales": [1, 1, 2, 2]}, "pytorch_half_pixel", 13),
    ("align_corners_5x9_to_17x40", [1, 1, 5, 9], {"sizes": [1, 1, 17, 40]}, "align_corners", 13),
    ("align_corners_x8", [1, 1, 8, 6], {"scales": [1, 1, 8, 8]}, "align_corners", 13),
    ("asymmetric_x1.7x3.3", [1, 1, 10, 12], {"scales": [1, 1, 1.7, 3.3]}, "asymmetric", 13),
    ("asymmetric_x4", [1, 1, 9, 9], {"scales": [1, 1, 4, 4]}, "asymmetric", 13),
]

# Writes onnxruntime's first output as raw float32 (for --test_rows).
ORT_DUMP_JS = """
const fs = require('fs');
const ort = require(require.resolve('onnxruntime-node', {paths: [process.argv[2]]}));
(async () => {
  const [model, input, out] = process.argv.slice(3);
  const buf = fs.readFileSync(input);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + hlen);
  const shape = header.match(/'shape': \\(([^)]*)\\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + hlen, buf.byteOffset + buf.length));
  const s = await ort.InferenceSession.create(model, {intraOpNumThreads: 1});
  const r = await s.run({[s.inputNames[0]]: new ort.Tensor('float32', data, shape)});
  const y = r[s.outputNames[0]].data;
  fs.writeFileSync(out, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
})();
"""


def formula_input(shape):
    """x[i] = float((h(i) mod 20001) - 10000) / 997, h(i) = i * 2654435761 mod 2^32 (as the test)."""
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    h = (i * np.uint64(2654435761)) % np.uint64(1 << 32)
    return ((h % np.uint64(20001)).astype(np.int64) - 10000).astype(f32).reshape(shape) / f32(997)


def save_case(d, case):
    name, in_shape, given, mode, opset = case
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)
    inits = []
    if opset == 9:
        inits.append(numpy_helper.from_array(np.array(given["scales"], f32), "scales"))
        node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="linear")
    else:
        inits.append(numpy_helper.from_array(np.zeros(0, f32), "roi"))
        if "scales" in given:
            inits.append(numpy_helper.from_array(np.array(given["scales"], f32), "scales"))
            inputs = ["x", "roi", "scales"]
        else:
            inits.append(numpy_helper.from_array(np.zeros(0, f32), "scales"))
            inits.append(numpy_helper.from_array(np.array(given["sizes"], np.int64), "sizes"))
            inputs = ["x", "roi", "scales", "sizes"]
        node = helper.make_node("Resize", inputs, ["y"], mode="linear", coordinate_transformation_mode=mode)
    # Symbolic output dims: ONNX's shape inference sizes scales in double, the kernels in float.
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "c", "h", "w"])
    graph = helper.make_graph([node], name, [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    path = os.path.join(d, name + ".onnx")
    onnx.save(model, path)
    np.save(os.path.join(d, name + "_x.npy"), formula_input(in_shape))
    return path


def out_dim(given, in_shape, k):
    if "sizes" in given:
        return given["sizes"][k]
    return int(f32(given["scales"][k]) * f32(in_shape[k]))  # onnxruntime: float product, truncated


def axis_taps(mode, n_in, n_out, scale, coordinate_type=f32):
    """onnxruntime's per-axis taps (resize_bilinear.h); coordinate_type=np.float64 is a mutation."""
    t = coordinate_type
    j = np.arange(n_out, dtype=t)
    scale = t(scale)
    if scale == 1:
        c = j
    elif mode == "half_pixel":
        c = (j + t(0.5)) / scale - t(0.5)
    elif mode == "pytorch_half_pixel":
        c = (j + t(0.5)) / scale - t(0.5) if n_out > 1 else np.zeros(n_out, t)
    elif mode == "align_corners":
        c = j * t(n_in - 1) / t(n_out - 1) if n_out != 1 else np.zeros(n_out, t)
    else:
        c = j / scale
    c = np.maximum(t(0), np.minimum(c, t(n_in - 1)))
    lo = np.minimum(c.astype(np.int64), n_in - 1)
    up = np.minimum(lo + 1, n_in - 1)
    w_up = np.abs(c - lo).astype(f32)
    w_lo = np.abs(c - up).astype(f32)
    w_lo[lo == up] = 0.5
    w_up[lo == up] = 0.5
    return lo, up, w_lo, w_up


def model_outputs(x, case):
    """onnxruntime's arithmetic ("onnxruntime") and plausible others, as numpy float32."""
    name, in_shape, given, mode, _ = case
    h, w = in_shape[2:]
    oh, ow = out_dim(given, in_shape, 2), out_dim(given, in_shape, 3)
    scale = [f32(oh) / f32(h), f32(ow) / f32(w)] if "sizes" in given else [f32(s) for s in given["scales"][2:]]
    out = {}
    for coordinate_type in (f32, np.float64):
        ylo, yup, wylo, wyup = axis_taps(mode, h, oh, scale[0], coordinate_type)
        xlo, xup, wxlo, wxup = axis_taps(mode, w, ow, scale[1], coordinate_type)
        a, b = x[..., ylo[:, None], xlo[None, :]], x[..., ylo[:, None], xup[None, :]]
        c, d = x[..., yup[:, None], xlo[None, :]], x[..., yup[:, None], xup[None, :]]
        wl, wu, vl, vu = wxlo[None, :], wxup[None, :], wylo[:, None], wyup[:, None]
        terms = [(wl * vl) * a, (wu * vl) * b, (wl * vu) * c, (wu * vu) * d]
        if coordinate_type is np.float64:
            out["double coordinates"] = terms[0] + terms[1] + terms[2] + terms[3]
            continue
        out["onnxruntime"] = terms[0] + terms[1] + terms[2] + terms[3]
        out["sums in pairs"] = (terms[0] + terms[1]) + (terms[2] + terms[3])
        acc = terms[0].astype(np.float64)
        for wt, v in (((wu * vl), b), ((wl * vu), c), ((wu * vu), d)):  # fused: one rounding per step
            acc = (wt.astype(np.float64) * v.astype(np.float64) + acc).astype(f32).astype(np.float64)
        out["fused multiply-adds"] = acc.astype(f32)
        out["two 1-D passes"] = vl * (wl * a + wu * b) + vu * (wl * c + wu * d)
        top, bottom = a + (b - a) * wu, c + (d - c) * wu
        out["lerp form"] = top + (bottom - top) * vu
    return out


def qfuse_run(d, name):
    out = os.path.join(d, name + ".f32")
    subprocess.run([os.path.join(ROOT, "bazel-bin", "tools", "run"), "--model=" + os.path.join(d, name + ".onnx"),
                    "--data=" + os.path.join(d, name + "_x.npy"), "--save_outputs=" + out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def ort_max_abs(d, name, qfuse_output, optimization):
    line = subprocess.run(["node", os.path.join(ROOT, "models", "zoo", "ort_compare.js"),
                           os.path.join(d, name + ".onnx"), os.path.join(d, name + "_x.npy"), qfuse_output, "",
                           optimization], check=True, capture_output=True, text=True).stdout
    return json.loads(line)["max_abs"]


def ort_output(d, name):
    script = os.path.join(d, "ort_dump.js")
    with open(script, "w") as f:
        f.write(ORT_DUMP_JS)
    out = os.path.join(d, name + ".ort.f32")
    subprocess.run(["node", script, os.path.join(ROOT, "tools", "ort"), os.path.join(d, name + ".onnx"),
                    os.path.join(d, name + "_x.npy"), out], check=True)
    return np.fromfile(out, f32)


def print_test_rows(d):
    for case in TEST_CASES:
        name, in_shape, given, mode, _ = case
        save_case(d, case)
        ort = ort_output(d, name)
        variants = {k: v.ravel() for k, v in model_outputs(formula_input(in_shape), case).items()}
        assert np.array_equal(variants["onnxruntime"].view(np.uint32), ort.view(np.uint32)), name
        picked = []
        for key, v in variants.items():  # up to three positions where each other form differs
            if key != "onnxruntime":
                picked += [int(i) for i in np.flatnonzero(v.view(np.uint32) != ort.view(np.uint32))[:3]]
        picked = sorted(set(picked + [0, ort.size - 1]))
        kind = "sizes" if "sizes" in given else "scales"
        values = ", ".join(f"{{{i}, 0x{ort.view(np.uint32)[i]:08x}}}" for i in picked)
        print(f"      {{\"{mode}\", {{{', '.join(map(str, in_shape))}}}, {kind}, "
              f"{{{', '.join(map(str, given[kind]))}}}, {{{values}}}}},")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", help="write the models and outputs here instead of a temporary directory")
    parser.add_argument("--test_rows", action="store_true", help="print resize_bilinear_test's rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        if args.test_rows:
            print_test_rows(d)
            return
        for case in CASES:
            name = case[0]
            save_case(d, case)
            out = qfuse_run(d, name)
            diffs = [ort_max_abs(d, name, out, level) for level in ("all", "disabled")]
            count = int(np.prod(case[1][:2])) * out_dim(case[2], case[1], 2) * out_dim(case[2], case[1], 3)
            op = "Upsample-9" if case[4] == 9 else f"Resize-{case[4]}"
            onnx_form = case[3] == "align_corners" and "scales" in case[2] and any(
                float(f32(s)) * n != out_dim(case[2], case[1], k) for k, (s, n) in enumerate(zip(case[2]["scales"], case[1])))
            print(f"{op:10s} {name:36s} max |diff| {diffs[0]:.3g} (onnxruntime 'all'), {diffs[1]:.3g} ('disabled')"
                  f" over {count} values" + (" [ONNX form]" if onnx_form else ""))


if __name__ == "__main__":
    main()
