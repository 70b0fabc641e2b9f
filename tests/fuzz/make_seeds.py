#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Small valid inputs of every format each target reads, so that libFuzzer starts from
files that reach deep into the code: tiny ONNX models (float ops of each kernel family,
a QDQ int8 convolution, legacy opset-9 forms, the five issue-13 F1 shapes that wrap
int64), .npy / IDX (plain and gzip) / PNG / JPEG / TensorProto files, and calibration
tables in JSON and TensorRT-cache text. Run with Debian's /usr/bin/python3 (onnx, numpy,
PIL); the output is deterministic.

    /usr/bin/python3 tests/fuzz/make_seeds.py
"""
import gzip
import io
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(7)


def out(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(name, nodes, inputs, outputs, inits=(), opset=13):
    g = h.make_graph(nodes, name, inputs, outputs, [nh.from_array(v, k) for k, v in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="make_seeds")
    m.ir_version = 7
    onnx.checker.check_model(m)
    out("model", name + ".onnx", m.SerializeToString())


def vi(name, shape, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, shape)


def models():
    x4 = vi("x", [1, 2, 5, 5])
    model("conv_bn_add_relu",
          [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
           h.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
           h.make_node("Add", ["n", "x"], ["a"]), h.make_node("Relu", ["a"], ["y"])],
          [x4], [vi("y", [1, 2, 5, 5])],
          [("w", floats(2, 2, 3, 3)), ("b", floats(2)), ("s", floats(2)), ("bb", floats(2)),
           ("m", floats(2)), ("v", np.abs(floats(2)) + 0.5)])
    model("depthwise_pool_gemm",
          [h.make_node("Conv", ["x", "w"], ["c"], group=2, strides=[2, 2], kernel_shape=[3, 3]),
           h.make_node("Clip", ["c", "lo", "hi"], ["r"]),
           h.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], ceil_mode=1),
           h.make_node("GlobalAveragePool", ["p"], ["g"]), h.make_node("Flatten", ["g"], ["f"]),
           h.make_node("Gemm", ["f", "gw", "gb"], ["y"], transB=1)],
          [x4], [vi("y", [1, 3])],
          [("w", floats(2, 1, 3, 3)), ("lo", np.array(0, np.float32)), ("hi", np.array(6, np.float32)),
           ("gw", floats(3, 2)), ("gb", floats(3))])
    model("shape_ops",
          [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["n"], axis=0),
           h.make_node("Unsqueeze", ["n", "ax"], ["nu"]), h.make_node("Concat", ["nu", "rest"], ["shape"], axis=0),
           h.make_node("Reshape", ["x", "shape"], ["r"]), h.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
           h.make_node("Slice", ["t", "st", "en", "axes"], ["sl"]),
           h.make_node("Split", ["sl", "split"], ["a", "b"], axis=1),
           h.make_node("Concat", ["b", "a"], ["c"], axis=1),
           h.make_node("Softmax", ["c"], ["y"], axis=-1)],
          [x4], [vi("y", [1, "a", "b"])],
          [("i0", np.array(0, np.int64)), ("ax", np.array([0], np.int64)), ("rest", np.array([10, 5], np.int64)),
           ("st", np.array([1], np.int64)), ("en", np.array([5], np.int64)), ("axes", np.array([2], np.int64)),
           ("split", np.array([2, 3], np.int64))])
    model("resize_pad_reduce",
          [h.make_node("Resize", ["x", "", "scales"], ["r"], mode="linear"),
           h.make_node("Pad", ["r", "pads"], ["p"], mode="reflect"),
           h.make_node("ReduceMean", ["p"], ["m"], axes=[2, 3], keepdims=1),
           h.make_node("Sub", ["p", "m"], ["d"]), h.make_node("Mul", ["d", "d"], ["y"])],
          [x4], [vi("y", [1, 2, "h", "w"])],
          [("scales", np.array([1, 1, 2, 2], np.float32)), ("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))])
    model("matmul_layernorm_einsum",
          [h.make_node("MatMul", ["x", "w"], ["m"]),
           h.make_node("LayerNormalization", ["m", "g", "b"], ["n"], axis=-1),
           h.make_node("Einsum", ["n", "n"], ["e"], equation="bij,bkj->bik"),
           h.make_node("Erf", ["e"], ["y"])],
          [vi("x", [2, 3, 4])], [vi("y", [2, 3, 3])],
          [("w", floats(4, 4)), ("g", floats(4)), ("b", floats(4))], opset=17)
    model("conv_transpose",
          [h.make_node("ConvTranspose", ["x", "w"], ["c"], strides=[2, 2], output_padding=[1, 1]),
           h.make_node("LeakyRelu", ["c"], ["y"], alpha=0.1)],
          [x4], [vi("y", [1, 3, 12, 12])], [("w", floats(2, 3, 3, 3))])
    # An int8 QDQ convolution: the executor lowers it to integer kernels.
    model("qdq_conv",
          [h.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
           h.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
           h.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
           h.make_node("DequantizeLinear", ["bq", "bs"], ["bd"]),
           h.make_node("Conv", ["xd", "wd", "bd"], ["c"], pads=[1, 1, 1, 1]),
           h.make_node("Relu", ["c"], ["r"]),
           h.make_node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
           h.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])],
          [x4], [vi("y", [1, 2, 5, 5])],
          [("xs", np.array(0.02, np.float32)), ("xz", np.array(0, np.int8)),
           ("wq", RNG.integers(-127, 128, (2, 2, 3, 3)).astype(np.int8)), ("ws", np.array([0.01, 0.02], np.float32)),
           ("wz", np.zeros(2, np.int8)), ("bq", np.array([100, -50], np.int32)),
           ("bs", np.array([0.0002, 0.0004], np.float32)),
           ("ys", np.array(0.05, np.float32)), ("yz", np.array(0, np.int8))])
    model("opset9_legacy",
          [h.make_node("Upsample", ["x", "scales"], ["u"], mode="nearest"),
           h.make_node("Clip", ["u"], ["c"], min=0.0, max=6.0),
           h.make_node("Flatten", ["c"], ["f"], axis=1), h.make_node("Softmax", ["f"], ["y"], axis=1)],
          [x4], [vi("y", [1, 200])], [("scales", np.array([1, 1, 2, 2], np.float32))], opset=9)
    # Issue 13 F1: element counts that wrap int64 (4 * (2^62 + 196) == 784).
    wrap = (1 << 62) + 196
    x28 = vi("x", [1, 1, 28, 28])
    y2 = vi("y", ["a", "b"])
    reshape = h.make_node("Reshape", ["x", "shape"], ["r"], name="wrapping_reshape")
    model("f1_gather", [reshape, h.make_node("Gather", ["r", "idx"], ["y"])], [x28], [y2],
          [("shape", np.array([wrap, 4], np.int64)), ("idx", np.array([1000000], np.int64))])
    model("f1_slice", [reshape, h.make_node("Slice", ["r", "st", "en"], ["y"])], [x28], [y2],
          [("shape", np.array([wrap, 4], np.int64)), ("st", np.array([1000000], np.int64)),
           ("en", np.array([1000010], np.int64))])
    model("f1_transpose", [reshape, h.make_node("Transpose", ["r"], ["y"], perm=[1, 0])], [x28], [y2],
          [("shape", np.array([wrap, 4], np.int64))])
    model("f1_constant_of_shape",
          [h.make_node("ConstantOfShape", ["s"], ["c"]), h.make_node("Add", ["c", "c"], ["y"])], [x28], [y2],
          [("s", np.array([wrap, 4], np.int64))])
    model("f1_expand",
          [h.make_node("Reshape", ["x", "flat"], ["r"]), h.make_node("Expand", ["r", "es"], ["y"])], [x28], [y2],
          [("flat", np.array([1, 784], np.int64)), ("es", np.array([(1 << 62) + 1, 784], np.int64))])


def npy_bytes(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def idx_bytes(array):
    code = {np.uint8: 0x08, np.float32: 0x0D}[array.dtype.type]
    data = array.astype(">f4").tobytes() if code == 0x0D else array.tobytes()
    return bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape) + data


def image_bytes(mode, size, fmt):
    pixels = RNG.integers(0, 256, (size[1], size[0], 3 if mode == "RGB" else 1)).astype(np.uint8)
    img = Image.fromarray(pixels.squeeze(), mode)
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


def data_files():
    out("npy", "float32_2x3.npy", npy_bytes(floats(2, 3)))
    out("npy", "uint8_2x1x2x2.npy", npy_bytes(RNG.integers(0, 256, (2, 1, 2, 2)).astype(np.uint8)))
    out("npy", "f2_rows_2pow62.npy", npy_bytes(floats(2, 3)).replace(b"(2, 3)", b"(4611686018427387904, 3)"))
    images = RNG.integers(0, 256, (3, 4, 4)).astype(np.uint8)
    out("idx", "uint8_3x4x4.idx", idx_bytes(images))
    out("idx", "uint8_3x4x4.idx.gz", gzip.compress(idx_bytes(images), mtime=0))
    out("idx", "float32_2x3.idx", idx_bytes(floats(2, 3)))
    out("idx", "labels_5.idx", idx_bytes(np.array([1, 0, 9, 3, 3], np.uint8)))
    out("image", "rgb_5x3.png", image_bytes("RGB", (5, 3), "PNG"))
    out("image", "gray_4x4.png", image_bytes("L", (4, 4), "PNG"))
    out("image", "rgb_8x8.jpg", image_bytes("RGB", (8, 8), "JPEG"))
    out("image", "gray_8x6.jpg", image_bytes("L", (8, 6), "JPEG"))
    out("pb", "float32_raw.pb", nh.from_array(floats(2, 3), "input_0").SerializeToString())
    typed = h.make_tensor("input_0", T.INT64, [3], [1, -2, 3])
    out("pb", "int64_typed.pb", typed.SerializeToString())
    out("pb", "float16_raw.pb", nh.from_array(floats(4).astype(np.float16), "x").SerializeToString())


def tables():
    out("table", "table.json", b"""{
  "format": "qfuse-calibration",
  "version": 1,
  "method": "auto",
  "samples": 512,
  "fingerprint": "c6cae7a3e380f8b6",
  "tensors": {
    "input": {"threshold": 2.0235, "scale": 0.015933, "scale_bits": "3c8288a9", "min": -0.81, "max": 2.02,
              "method": "max"},
    "conv1_out": {"threshold": 4.5, "scale": 0.035433, "scale_bits": "3d1121a4", "min": 0.0, "max": 7.25,
                  "method": "mse"}
  }
}
""")
    out("table", "table.cache", b"TRT-8601-LegacyCalibration\ninput: 3c8288a9\nconv1_out: 3d1121a4\n")


if __name__ == "__main__":
    models()
    data_files()
    tables()
