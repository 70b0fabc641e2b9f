#!/usr/bin/env python3
"""Checks qfuse's float32 Erf, GELU, LayerNorm, Softmax and GlobalAveragePool against onnxruntime's, value for value.

These are the float ops that sit between DequantizeLinear and QuantizeLinear in the zoo's
transformers, where one ulp can move a value across a rounding boundary of the next
QuantizeLinear (or, for GlobalAveragePool, the last float ops of a CNN after its last
DequantizeLinear); qfuse computes each as onnxruntime 1.30 does on x86 with AVX2 or AVX-512 (ir/erf.h,
runtime/kernels/nn/layer_norm_row.h, softmax_row.h, global_average_row.h). The script writes
small float models:
  erf.onnx           Erf alone, on 2^20 values (half a grid over [-5, 5], half normal with
                     sigma 2, plus 0, -0, the split point 0.921875 and values past the clamp);
  gelu.onnx          Div(x, sqrt 2) -> Erf -> Add 1 -> Mul x -> Mul 0.5 (PyTorch's GELU before
                     opset 20; onnxruntime's GeluFusion runs it as its Gelu kernel), same values;
  gelu_product.onnx  Mul(x, 0.70710678) -> Erf -> Add 1 -> Mul(Mul(x, 0.5), .), the product form
                     qfuse's fused Gelu computes where onnxruntime fuses (gelu_fusion_test checks
                     the fused kernel gives exactly the product form);
  ln_<n>_<data>.onnx LayerNormalization-17 over rows of n = 5, 9, 12, 20, 64, 192, 768 (2048 rows;
                     inputs normal(0.3, 2) and normal(50, 1); with a bias, and n = 12 also without);
  rms_<n>_<data>.onnx Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div -> Mul scale over rows of
                     n = 5, 8, 12, 15, 16, 19, 20, 64, 192, 768 (onnxruntime's SimplifiedLayerNormFusion makes it
                     its SimplifiedLayerNormalization; qfuse's runtime its own, layer_norm_fusion.h);
  softmax_*, logsoftmax_*  Softmax-13 / LogSoftmax-13 over the last axis of rows of n = 1 to 1000
                     (inputs normal(0, 10) and uniform(-80, 80)), and over a middle axis;
  gap_<h>x<w>_c<c>   GlobalAveragePool-13 on [4, c, h, w], spatial sizes 1 to 300, c = 3, 10, 64 and
                     1000 (inputs normal(0.3, 3) times a per-channel scale in [0.01, 100]): at
                     level 'all' onnxruntime runs c = 64 and 1000 on a graph input as its NCHWc
                     pool (sums in sequence; on an AVX-512 machine, whose NCHWc block is 16, c = 64
                     only), the others in MlasPool's four lanes; so do
                     gap_dync_7x7 (channel dim symbolic, 16 at run time), gap_1d_49 / gap_3d_3x4x5
                     (rank 3 and 5, 16 channels), gap_relu_7x7_c64 (Relu -> GlobalAveragePool) and
                     gap_qdq_13x13_c1000 (QuantizeLinear -> DequantizeLinear -> GlobalAveragePool
                     -> Flatten, SqueezeNet's int8 head); gap_softmax_7x7_c10 is the legacy-Softmax
                     head, GlobalAveragePool -> Flatten -> Softmax. The graph-input c = 64 and 1000
                     models are also compared with onnxruntime at level 'disabled' (MlasPool's four
                     lanes), to show the order matters.
Runs each in qfuse (bazel-bin/tools/run, float kernels) and onnxruntime (tools/ort's
onnxruntime-node via models/zoo/ort_compare.js) and prints max |qfuse - onnxruntime|; 0 means
every value is the same float. The GELU rows compare qfuse's product form with onnxruntime's
fused Gelu, qfuse's five ops with onnxruntime's five ops (optimisation disabled), and, for
scale, qfuse's five ops with onnxruntime's fused Gelu.

  /usr/bin/python3 models/zoo/float_ops_probe.py [--keep DIR]
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
N = 1 << 20


def scalar(name, value):
    return helper.make_tensor(name, TensorProto.FLOAT, [], [value])


def save(path, nodes, initializers, dims, opset=13):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph(nodes, os.path.basename(path), [x], [y], initializer=initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)


def write_erf_models(d):
    dims = [1, N]
    save(os.path.join(d, "erf.onnx"), [helper.make_node("Erf", ["x"], ["y"])], [], dims)
    save(os.path.join(d, "gelu.onnx"),
         [helper.make_node("Div", ["x", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
          helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "a"], ["m"]),
          helper.make_node("Mul", ["m", "half"], ["y"])],
         [scalar("sqrt2", float(np.float32(np.sqrt(2)))), scalar("one", 1.0), scalar("half", 0.5)], dims)
    save(os.path.join(d, "gelu_product.onnx"),
         [helper.make_node("Mul", ["x", "inv"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
          helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "half"], ["h"]),
          helper.make_node("Mul", ["h", "a"], ["y"])],
         [scalar("inv", float(np.float32(0.70710678118654752440))), scalar("one", 1.0), scalar("half", 0.5)], dims)
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-5, 5, N // 2, dtype=np.float32), rng.normal(0, 2, N // 2).astype(np.float32)])
    x[:8] = [0, -0.0, 0.921875, -0.921875, np.nextafter(np.float32(0.921875), np.float32(1)), 3.925, 10, -10]
    np.save(os.path.join(d, "erf_x.npy"), x.reshape(dims).astype(np.float32))


def write_layer_norm_models(d):
    rng = np.random.default_rng(1)
    cases = []
    for n in (5, 9, 12, 20, 64, 192, 768):
        for data, (mean, sigma) in (("n0.3", (0.3, 2.0)), ("n50", (50.0, 1.0))):
            for with_bias in ((True, False) if n == 12 else (True,)):
                name = f"ln_{n}_{data}" + ("" if with_bias else "_nobias")
                inits = [numpy_helper.from_array(rng.normal(1, 0.3, n).astype(np.float32), "scale")]
                inputs = ["x", "scale"]
                if with_bias:
                    inits.append(numpy_helper.from_array(rng.normal(0, 0.5, n).astype(np.float32), "bias"))
                    inputs.append("bias")
                node = helper.make_node("LayerNormalization", inputs, ["y"], axis=-1, epsilon=1e-5)
                save(os.path.join(d, name + ".onnx"), [node], inits, ["rows", n], opset=17)
                np.save(os.path.join(d, name + "_x.npy"), rng.normal(mean, sigma, (2048, n)).astype(np.float32))
                cases.append(name)
    return cases


def write_rms_models(d):
    """Pow(x, 2) -> ReduceMean -> Add eps -> Sqrt -> Div(x, .) -> Mul scale over rows of n, the
    RMS tail onnxruntime's SimplifiedLayerNormFusion fuses (a LayerNorm whose bias Add follows
    a QuantizeLinear at level none)."""
    rng = np.random.default_rng(2)
    cases = []
    for n in (5, 8, 12, 15, 16, 19, 20, 64, 192, 768):
        for data, (mean, sigma) in (("n0", (0.0, 2.0)), ("n50", (50.0, 1.0))):
            name = f"rms_{n}_{data}"
            nodes = [helper.make_node("Pow", ["x", "two"], ["p"]),
                     helper.make_node("ReduceMean", ["p"], ["m"], axes=[-1], keepdims=1),
                     helper.make_node("Add", ["m", "eps"], ["a"]), helper.make_node("Sqrt", ["a"], ["r"]),
                     helper.make_node("Div", ["x", "r"], ["q"]), helper.make_node("Mul", ["q", "scale"], ["y"])]
            inits = [scalar("two", 2.0), scalar("eps", 1e-5),
                     numpy_helper.from_array(rng.normal(1, 0.3, n).astype(np.float32), "scale")]
            save(os.path.join(d, name + ".onnx"), nodes, inits, ["rows", n])
            np.save(os.path.join(d, name + "_x.npy"), rng.normal(mean, sigma, (2048, n)).astype(np.float32))
            cases.append(name)
    return cases


def write_softmax_models(d):
    rng = np.random.default_rng(2)
    cases = []
    for op in ("Softmax", "LogSoftmax"):
        for n in (1, 5, 8, 9, 33, 197, 1000):
            for data, draw in (("n10", lambda shape: rng.normal(0, 10, shape)),
                               ("u80", lambda shape: rng.uniform(-80, 80, shape))):
                name = f"{op.lower()}_{n}_{data}"
                save(os.path.join(d, name + ".onnx"), [helper.make_node(op, ["x"], ["y"], axis=-1)], [], ["rows", n])
                np.save(os.path.join(d, name + "_x.npy"), draw((1024, n)).astype(np.float32))
                cases.append((name, 1024 * n))
        # A middle axis: onnxruntime moves it last, qfuse gathers each slice into a row.
        name = f"{op.lower()}_axis1"
        save(os.path.join(d, name + ".onnx"), [helper.make_node(op, ["x"], ["y"], axis=1)], [], ["rows", 37, 5])
        np.save(os.path.join(d, name + "_x.npy"), rng.normal(0, 10, (256, 37, 5)).astype(np.float32))
        cases.append((name, 256 * 37 * 5))
    return cases


def write_global_average_models(d):
    rng = np.random.default_rng(3)
    cases = []

    def model(name, nodes, x_dims, y_dims, data_dims, initializers=()):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_dims)
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, y_dims)
        graph = helper.make_graph(nodes, name, [x], [y], initializer=list(initializers))
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]),
                  os.path.join(d, name + ".onnx"))
        scale = rng.uniform(0.01, 100, data_dims[:2] + [1] * (len(data_dims) - 2))
        np.save(os.path.join(d, name + "_x.npy"), (rng.normal(0.3, 3, data_dims) * scale).astype(np.float32))
        cases.append((name, int(np.prod(data_dims[:2]))))

    gap = [helper.make_node("GlobalAveragePool", ["x"], ["y"])]
    for h, w in ((1, 1), (3, 3), (7, 7), (8, 8), (13, 13), (14, 14), (16, 16), (5, 9), (17, 17), (15, 20), (1, 300)):
        for c in (3, 10, 64, 1000):
            model(f"gap_{h}x{w}_c{c}", gap, ["batch", c, h, w], ["batch", c, 1, 1], [4, c, h, w])
    model("gap_dync_7x7", gap, ["batch", "channels", 7, 7], ["batch", "channels", 1, 1], [4, 16, 7, 7])
    model("gap_1d_49", gap, ["batch", 16, 49], ["batch", 16, 1], [4, 16, 49])
    model("gap_3d_3x4x5", gap, ["batch", 16, 3, 4, 5], ["batch", 16, 1, 1, 1], [4, 16, 3, 4, 5])
    model("gap_relu_7x7_c64",
          [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["y"])],
          ["batch", 64, 7, 7], ["batch", 64, 1, 1], [4, 64, 7, 7])
    model("gap_qdq_13x13_c1000",
          [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
           helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
           helper.make_node("GlobalAveragePool", ["d"], ["p"]), helper.make_node("Flatten", ["p"], ["y"], axis=1)],
          ["batch", 1000, 13, 13], ["batch", 1000], [4, 1000, 13, 13],
          [scalar("s", 0.37), helper.make_tensor("z", TensorProto.UINT8, [], [3])])
    model("gap_softmax_7x7_c10",
          [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Flatten", ["p"], ["f"], axis=1),
           helper.make_node("Softmax", ["f"], ["y"], axis=1)], ["batch", 10, 7, 7], ["batch", 10], [64, 10, 7, 7])
    return cases


def qfuse_run(d, model, data):
    out = os.path.join(d, model + ".f32")
    subprocess.run([os.path.join(ROOT, "bazel-bin", "tools", "run"), "--model=" + os.path.join(d, model + ".onnx"),
                    "--data=" + os.path.join(d, data), "--save_outputs=" + out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def ort_max_abs(d, model, data, qfuse_output, optimization="all"):
    line = subprocess.run(["node", os.path.join(ROOT, "models", "zoo", "ort_compare.js"),
                           os.path.join(d, model + ".onnx"), os.path.join(d, data), qfuse_output, "",
                           optimization], check=True, capture_output=True, text=True).stdout
    return json.loads(line)["max_abs"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", help="write the models and outputs here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        write_erf_models(d)
        erf, gelu, product = (qfuse_run(d, m, "erf_x.npy") for m in ("erf", "gelu", "gelu_product"))
        rows = [("qfuse Erf vs onnxruntime Erf", ort_max_abs(d, "erf", "erf_x.npy", erf), N),
                ("qfuse product form vs onnxruntime fused Gelu", ort_max_abs(d, "gelu", "erf_x.npy", product), N),
                ("qfuse five ops vs onnxruntime five ops", ort_max_abs(d, "gelu", "erf_x.npy", gelu, "disabled"), N),
                ("qfuse five ops vs onnxruntime fused Gelu", ort_max_abs(d, "gelu", "erf_x.npy", gelu), N)]
        for case in write_layer_norm_models(d):
            out = qfuse_run(d, case, case + "_x.npy")
            n = int(case.split("_")[1])
            rows.append((f"LayerNormalization {case}", ort_max_abs(d, case, case + "_x.npy", out), 2048 * n))
        for case in write_rms_models(d):
            out = qfuse_run(d, case, case + "_x.npy")
            n = int(case.split("_")[1])
            rows.append((f"RMS tail {case}", ort_max_abs(d, case, case + "_x.npy", out), 2048 * n))
        for case, count in write_softmax_models(d):
            out = qfuse_run(d, case, case + "_x.npy")
            rows.append((case, ort_max_abs(d, case, case + "_x.npy", out), count))
        for case, count in write_global_average_models(d):
            out = qfuse_run(d, case, case + "_x.npy")
            rows.append((case, ort_max_abs(d, case, case + "_x.npy", out), count))
            graph_input_nchwc = case.endswith(("_c64", "_c1000")) and not case.startswith(("gap_relu", "gap_qdq"))
            if graph_input_nchwc and not case.startswith("gap_1x1"):
                rows.append((case + " vs onnxruntime 'disabled'",
                             ort_max_abs(d, case, case + "_x.npy", out, "disabled"), count))
        for name, diff, count in rows:
            print(f"{name:48s} max |diff| {diff:.3g} over {count} values")


if __name__ == "__main__":
    main()
