#!/usr/bin/python3
"""Feeds qfuse's tools bad models, bad data and bad output paths, and checks each outcome.

Every probe must end in a non-zero exit with a one-line error on stderr (or, where noted,
in a correct success), never in a crash (exit >= 128), never with a partial output file
and never with a changed input. Prints a Markdown table (docs/reliability.md holds one run)
and exits non-zero if any probe misbehaves.

    bazel build //tools/... && /usr/bin/python3 tools/reliability/probe.py [--table out.md]

Needs Debian's python3-onnx and python3-numpy (models/setup_python.sh).
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "bazel-bin", "tools")
TOOLS = {"run": f"{BIN}/run", "fuse": f"{BIN}/fuse", "quantize": f"{BIN}/quantize/quantize",
         "calibrate": f"{BIN}/calibrate"}
WRAP = (1 << 62) + 196  # 4 * WRAP == 784 modulo 2^64


def save(path, nodes, inputs, outputs, inits=(), opset=13, check=True):
    g = h.make_graph(nodes, "probe", inputs, outputs, [nh.from_array(v, k) for k, v in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 7
    if check:
        onnx.checker.check_model(m)
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def vi(name, shape):
    return h.make_tensor_value_info(name, T.FLOAT, shape)


class Probe:
    def __init__(self, work):
        self.work = work
        self.rows = []
        self.failures = 0
        x = np.random.default_rng(1).random((8, 1, 28, 28), dtype=np.float32)
        self.x_npy = self.path("x.npy")
        np.save(self.x_npy, x)
        self.relu = save(self.path("relu.onnx"), [h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 1, 28, 28])],
                         [vi("y", [1, 1, 28, 28])])

    def path(self, name):
        return os.path.join(self.work, name)

    def file(self, name, data):
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def case(self, kind, what, tool, args, expect_ok=False, outputs=(), inputs=()):
        digests = {p: hashlib.sha256(open(p, "rb").read()).hexdigest() for p in inputs if os.path.isfile(p)}
        proc = subprocess.run([TOOLS[tool]] + args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                              stdin=subprocess.DEVNULL)
        # Progress lines ("evaluate fp32: ...") also go to stderr; errors start with "error:".
        err_lines = [l for l in proc.stderr.splitlines() if l.startswith("error")]
        problems = []
        if proc.returncode >= 128 or proc.returncode < 0:
            problems.append(f"crashed (exit {proc.returncode})")
        elif expect_ok and proc.returncode != 0:
            problems.append("failed but should succeed")
        elif not expect_ok and proc.returncode == 0:
            problems.append("accepted")
        if not expect_ok and len(err_lines) != 1:
            problems.append(f"{len(err_lines)} error lines")
        for p in outputs:
            if os.path.exists(p) and not expect_ok:
                problems.append(f"left {os.path.relpath(p, self.work)}")
        leftovers = [f for f in os.listdir(self.work) if ".tmp-" in f]
        if leftovers:
            problems.append(f"left {leftovers}")
        for p, d in digests.items():
            if hashlib.sha256(open(p, "rb").read()).hexdigest() != d:
                problems.append(f"changed input {p}")
        message = (err_lines[-1] if err_lines else proc.stdout.strip().splitlines()[-1]).replace(self.work + "/", "")
        message = message.replace("|", "\\|")
        status = "ok" if not problems else "**" + "; ".join(problems) + "**"
        self.failures += bool(problems)
        self.rows.append((kind, what, f"`{tool}`", proc.returncode, message[:160], status))

    def table(self):
        lines = ["| input | probe | tool | exit | message (first 160 chars) | verdict |", "|---|---|---|---:|---|---|"]
        lines += [f"| {k} | {w} | {t} | {rc} | {m} | {s} |" for k, w, t, rc, m, s in self.rows]
        return "\n".join(lines)


def model_probes(p):
    x28 = vi("x", [1, 1, 28, 28])
    y2 = vi("y", ["a", "b"])
    reshape = h.make_node("Reshape", ["x", "shape"], ["r"], name="wrapping_reshape")
    shape = ("shape", np.array([WRAP, 4], np.int64))
    models = {
        "missing file": p.path("missing.onnx"),
        "empty file": p.file("empty.onnx", b""),
        "a folder": p.work,
        "random bytes": p.file("random.onnx", np.random.default_rng(2).bytes(300)),
        "truncated model": p.file("truncated.onnx", open(p.relu, "rb").read()[:40]),
        "opset 6 with Mul (changed in 7)": save(
            p.path("opset6.onnx"), [h.make_node("Mul", ["x", "x"], ["y"])], [x28], [vi("y", [1, 1, 28, 28])], opset=6),
        "opset 99": save(p.path("opset99.onnx"), [h.make_node("Relu", ["x"], ["y"])], [x28],
                         [vi("y", [1, 1, 28, 28])], opset=99, check=False),
        "unknown operator": save(p.path("unknown_op.onnx"), [h.make_node("FooBar", ["x"], ["y"])], [x28],
                                 [vi("y", [1, 1, 28, 28])], check=False),
        "cycle": save(p.path("cycle.onnx"), [h.make_node("Relu", ["b"], ["a"]), h.make_node("Relu", ["a"], ["b"]),
                                             h.make_node("Relu", ["x"], ["y"])], [x28], [vi("y", [1, 1, 28, 28])],
                      check=False),
        "negative input dim": save(p.path("negdim.onnx"), [h.make_node("Relu", ["x"], ["y"])],
                                   [vi("x", [1, -3])], [vi("y", [1, -3])], check=False),
        "no graph outputs": save(p.path("noout.onnx"), [h.make_node("Relu", ["x"], ["y"])], [x28], [], check=False),
        "F1 Reshape [2^62+196,4] -> Gather": save(
            p.path("f1_gather.onnx"), [reshape, h.make_node("Gather", ["r", "i"], ["y"])], [x28], [y2],
            [shape, ("i", np.array([1000000], np.int64))]),
        "F1 Reshape -> Slice": save(
            p.path("f1_slice.onnx"), [reshape, h.make_node("Slice", ["r", "s", "e"], ["y"])], [x28], [y2],
            [shape, ("s", np.array([1000000], np.int64)), ("e", np.array([1000010], np.int64))]),
        "F1 Reshape -> Transpose": save(
            p.path("f1_transpose.onnx"), [reshape, h.make_node("Transpose", ["r"], ["y"], perm=[1, 0])], [x28], [y2],
            [shape]),
        "F1 ConstantOfShape [2^62+196,4]": save(
            p.path("f1_cos.onnx"), [h.make_node("ConstantOfShape", ["s"], ["c"], name="fill"),
                                    h.make_node("Add", ["c", "c"], ["y"])], [x28], [y2],
            [("s", np.array([WRAP, 4], np.int64))]),
        "F1 Expand [2^62+1,784]": save(
            p.path("f1_expand.onnx"), [h.make_node("Reshape", ["x", "f"], ["r"]),
                                       h.make_node("Expand", ["r", "s"], ["y"], name="expand")], [x28], [y2],
            [("f", np.array([1, 784], np.int64)), ("s", np.array([(1 << 62) + 1, 784], np.int64))]),
        "Conv pads 2^40": save(
            p.path("conv_pads.onnx"), [h.make_node("Conv", ["x", "w"], ["y"], pads=[1 << 40] * 4)], [x28],
            [vi("y", ["n", "c", "h", "w"])], [("w", np.ones((1, 1, 3, 3), np.float32))], check=False),
        "Resize scale 1e30": save(
            p.path("resize_huge.onnx"), [h.make_node("Resize", ["x", "", "sc"], ["y"])], [x28],
            [vi("y", ["n", "c", "h", "w"])], [("sc", np.array([1, 1, 1e30, 1e30], np.float32))]),
        "Split sizes that wrap to the dim": save(
            p.path("split_wrap.onnx"), [h.make_node("Split", ["x", "sp"], ["y", "z"], axis=3)], [x28],
            [vi("y", ["a", "b", "c", "d"]), vi("z", ["a", "b", "c", "d"])],
            [("sp", np.array([(1 << 63) - 1, -(1 << 63) + 29], np.int64))]),
        "MaxPool kernel 2^40": save(
            p.path("pool_huge.onnx"), [h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1 << 40, 1 << 40])], [x28],
            [vi("y", ["n", "c", "h", "w"])], check=False),
    }
    # An initializer whose dims wrap int64 and carry no data for them.
    m = onnx.load(p.relu)
    bad = nh.from_array(np.ones(784, np.float32), "w")
    del bad.dims[:]
    bad.dims.extend([WRAP, 4])
    m.graph.initializer.append(bad)
    m.graph.node[0].input[0] = "x"
    add = h.make_node("Add", ["y0", "w"], ["y"])
    m.graph.node[0].output[0] = "y0"
    m.graph.node.append(add)
    models["initializer dims [2^62+196,4] over 784 floats"] = p.file("init_wrap.onnx", m.SerializeToString())
    m = onnx.load(p.relu)
    ext = nh.from_array(np.ones((1, 1, 28, 28), np.float32), "w")
    ext.ClearField("raw_data")
    ext.data_location = T.EXTERNAL
    ext.external_data.add(key="location", value="../../../etc/passwd")
    m.graph.initializer.append(ext)
    models["external data outside the model folder"] = p.file("ext_escape.onnx", m.SerializeToString())
    for what, path in models.items():
        p.case("model", what, "run", [f"--model={path}"], inputs=[path])
    # Relu did not change between opsets 6 and 7: the old model runs.
    opset6_relu = save(p.path("opset6_relu.onnx"), [h.make_node("Relu", ["x"], ["y"])], [x28],
                       [vi("y", [1, 1, 28, 28])], opset=6)
    p.case("model", "opset 6 with only Relu (unchanged since)", "run", [f"--model={opset6_relu}"], expect_ok=True)
    p.case("model", "F1 Reshape -> Gather", "quantize",
           [f"--model={p.path('f1_gather.onnx')}", f"--calib_data={p.x_npy}", f"--output={p.path('q_f1')}",
            "--analysis_samples=0"], outputs=[p.path("q_f1")], inputs=[p.path("f1_gather.onnx")])
    p.case("model", "F1 ConstantOfShape", "fuse",
           [f"--model={p.path('f1_cos.onnx')}", "--check_equivalence", f"--output={p.path('fused.onnx')}"],
           outputs=[p.path("fused.onnx")])
    p.case("model", "output path = input path", "fuse", [f"--model={p.relu}", f"--output={p.relu}"],
           inputs=[p.relu])


def data_probes(p):
    header_rows = open(p.x_npy, "rb").read().replace(b"(8, 1, 28, 28)", b"(4611686018427387904, 1, 28, 28)")
    truncated = open(p.x_npy, "rb").read()[:1000]
    nan = np.random.default_rng(3).random((8, 1, 28, 28), dtype=np.float32)
    nan[5, 0, 3, 3] = np.nan
    np.save(p.path("nan.npy"), nan)
    np.save(p.path("wrong_shape.npy"), np.zeros((4, 3, 28, 28), np.float32))
    np.save(p.path("f64.npy"), np.zeros((4, 1, 28, 28), np.float64))
    os.makedirs(p.path("images"), exist_ok=True)
    p.file("images/broken.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    os.makedirs(p.path("jpeg_huge"), exist_ok=True)
    # A JPEG header (SOI, SOF0) declaring 65000 x 65000 pixels and nothing else.
    sof = b"\xff\xd8\xff\xc0\x00\x0b\x08" + (65000).to_bytes(2, "big") * 2 + b"\x01\x01\x11\x00"
    p.file("jpeg_huge/huge.jpg", sof + b"\xff\xd9")
    cases = {
        "F2 .npy header claiming 2^62 rows": [f"--calib_data={p.file('rows.npy', header_rows)}", "--calib_samples=4"],
        ".npy cut short": [f"--calib_data={p.file('short.npy', truncated)}"],
        ".npy with a NaN in sample 5": [f"--calib_data={p.path('nan.npy')}"],
        ".npy with 3 channels for a 1-channel model": [f"--calib_data={p.path('wrong_shape.npy')}"],
        ".npy of float64": [f"--calib_data={p.path('f64.npy')}"],
        "IDX cut short": [f"--calib_data={p.file('short.idx', bytes([0, 0, 8, 3, 0, 0, 0, 9, 0, 0, 0, 28, 0, 0, 0, 28]) + bytes(100))}"],
        "image folder with a corrupt PNG": [f"--calib_data={p.path('images')}", "--image_color=gray"],
        "JPEG header claiming 65000x65000": [f"--calib_data={p.path('jpeg_huge')}", "--image_color=gray"],
        "raw file not a multiple of the sample": [f"--calib_data={p.file('odd.raw', bytes(1001))}",
                                                  "--data_format=raw", "--raw_shape=1,28,28"],
        "raw_shape whose size wraps int64": [f"--calib_data={p.file('any.raw', bytes(784 * 4))}",
                                             "--data_format=raw", f"--raw_shape={WRAP},4"],
        "calibration table of garbage": [f"--calib_data={p.x_npy}", "--fusion=full",
                                         f"--calibration_table={p.file('garbage.json', b'{not json')}"],
    }
    for what, args in cases.items():
        out = p.path("q_" + what.split()[0].strip("."))
        p.case("data", what, "quantize", [f"--model={p.relu}", f"--output={out}", "--analysis_samples=0"] + args,
               outputs=[out], inputs=[p.relu])


def output_probes(p):
    blocker = p.file("plain_file", b"x")
    p.case("output", "--output is an existing file", "quantize",
           [f"--model={p.relu}", f"--calib_data={p.x_npy}", f"--output={blocker}"])
    p.case("output", "--output under a file", "quantize",
           [f"--model={p.relu}", f"--calib_data={p.x_npy}", f"--output={blocker}/q"])
    p.case("output", "--report under /proc", "quantize",
           [f"--model={p.relu}", f"--calib_data={p.x_npy}", f"--output={p.path('q_report')}", "--report=/proc/x/r"],
           outputs=[p.path("q_report")])
    stale = p.path("q_stale")
    os.makedirs(stale, exist_ok=True)
    open(os.path.join(stale, "model_int8_full.onnx.tmp-999999"), "w").close()
    p.case("output", "stale temporary file of a killed run", "quantize",
           [f"--model={p.relu}", f"--calib_data={p.x_npy}", f"--output={stale}", "--fusion=full",
            "--analysis_samples=0"], expect_ok=True)
    if os.path.exists(os.path.join(stale, "model_int8_full.onnx.tmp-999999")):
        p.rows[-1] = p.rows[-1][:5] + ("**stale file kept**",)
        p.failures += 1
    # Two runs into one folder: the second must fail at once while the first holds it.
    busy = p.path("q_busy")
    first = subprocess.Popen([TOOLS["quantize"], f"--output={busy}", "--analysis_samples=0"], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(os.path.join(busy, ".qfuse.lock")):
            break
        import time
        time.sleep(0.05)
    p.case("output", "second run into a folder in use", "quantize", [f"--output={busy}", "--analysis_samples=0"])
    first.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="also write the Markdown table here")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="qfuse-probe-")
    try:
        p = Probe(work)
        model_probes(p)
        data_probes(p)
        output_probes(p)
        table = p.table()
        print(table)
        print(f"\n{len(p.rows)} probes, {p.failures} misbehaved")
        if args.table:
            with open(args.table, "w") as f:
                f.write(table + "\n")
        return 1 if p.failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
