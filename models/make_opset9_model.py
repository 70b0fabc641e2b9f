"""Makes a tiny opset-9 test model whose weights are all Constant nodes.

Writes (relative to the repository root):
  tests/testdata/opset9_constant_weights/model.onnx
  tests/testdata/opset9_constant_weights/test_data_set_0/input_0.pb   ("input",  [1,3,8,8])
  tests/testdata/opset9_constant_weights/test_data_set_0/output_0.pb  ("output", [1,6])

The model is exported by torch at opset 9 (BatchNormalization kept as its own
node) and then rewritten with the onnx API so that graph.initializer is empty
and every weight is produced by a `Constant` node at the start of the node
list. It exercises opset-9-era operator forms:
  Conv, BatchNormalization, Relu, Clip (min/max attributes), Upsample (nearest,
  scales input), ReduceSum (axes attribute, keepdims 0 and 1), Unsqueeze and
  Squeeze (axes attributes), Add, Flatten, Gemm.

The expected output is computed by torch and cross-checked with a NumPy
evaluation of the final ONNX graph (models/onnx_numpy_ref.py).

Setup:  bash models/setup_python.sh
Run:    /usr/bin/python3 models/make_opset9_model.py     (a few seconds)
"""

import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import helper, numpy_helper, shape_inference

import onnx_numpy_ref

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "tests", "data", "opset9_constant_weights")
OPSET = 9
SEED = 9
INPUT_SHAPE = (1, 3, 8, 8)


class Opset9Net(nn.Module):
    """[1,3,8,8] -> [1,6]; one op of each opset-9 form the importer must handle."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=True)
        self.bn1 = nn.BatchNorm2d(4)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 1, 1, bias=True)
        self.fc = nn.Linear(64, 6)

    def forward(self, x):
        a = torch.clamp(self.bn1(self.conv1(x)), -1.0, 1.5)  # Conv, BN, Clip(attrs)
        b = self.up(a)                                       # Upsample -> [1,4,16,16]
        c = self.bn2(self.conv2(b))                          # Conv s2, BN -> [1,8,8,8]
        s1 = c.sum(dim=1).unsqueeze(1)                       # ReduceSum keepdims=0, Unsqueeze
        s2 = c.sum(dim=(2, 3), keepdim=True)                 # ReduceSum keepdims=1
        d = torch.relu(c + s1 + s2)                          # Add, Add, Relu
        e = self.conv3(d).squeeze(1)                         # Conv 1x1, Squeeze -> [1,8,8]
        return self.fc(torch.flatten(e, 1))                  # Flatten, Gemm -> [1,6]


def make_torch_model():
    torch.manual_seed(SEED)
    model = Opset9Net()
    # Non-trivial BN statistics and affine parameters, so BN is not an identity.
    with torch.no_grad():
        for bn in (model.bn1, model.bn2):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    return model.eval()


def export(model, path):
    """torch export at opset 9 with BatchNormalization kept unfolded.

    torch folds BN into Conv only with TrainingMode.EVAL; PRESERVE with the
    module in eval() exports an inference BatchNormalization node instead.
    Constant folding stays on so Upsample's scales (built by torch as
    Concat(Constant, Constant)) become a single constant tensor; it does not
    touch BN (torch warns about it for PRESERVE, which is harmless in eval).
    """
    torch.onnx.export(
        model, torch.zeros(INPUT_SHAPE), path,
        opset_version=OPSET,
        input_names=["input"],
        output_names=["output"],
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=True,
        keep_initializers_as_inputs=False)
    return onnx.load(path)


def initializers_to_constants(m):
    """Empties graph.initializer: each becomes a Constant node at the front.

    Constant nodes torch emitted itself (Upsample's scales) are moved to the
    front as well, so the node list starts with every constant tensor.
    """
    names = {t.name for t in m.graph.initializer}
    consts = []
    for t in m.graph.initializer:
        value = onnx.TensorProto()
        value.CopyFrom(t)
        consts.append(helper.make_node("Constant", [], [t.name], value=value,
                                       name=f"const_{t.name}"))
    consts += [n for n in m.graph.node if n.op_type == "Constant"]
    nodes = consts + [n for n in m.graph.node if n.op_type != "Constant"]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    del m.graph.initializer[:]
    # Older exporters list initializers as graph inputs too; drop those.
    inputs = [i for i in m.graph.input if i.name not in names]
    del m.graph.input[:]
    m.graph.input.extend(inputs)


def check_forms(m):
    """Asserts the graph really has the opset-9 forms this model is for."""
    ops = [n.op_type for n in m.graph.node]
    required = ["Constant", "Conv", "BatchNormalization", "Relu", "Clip", "Upsample",
                "ReduceSum", "Unsqueeze", "Squeeze", "Add", "Flatten", "Gemm"]
    missing = [op for op in required if op not in ops]
    if missing:
        sys.exit(f"missing ops: {missing}")
    if m.graph.initializer:
        sys.exit("graph.initializer is not empty")
    first_other = next(i for i, op in enumerate(ops) if op != "Constant")
    if "Constant" in ops[first_other:]:
        sys.exit("Constant nodes are not all at the start of the node list")
    attrs = lambda n: {a.name: helper.get_attribute_value(a) for a in n.attribute}
    for n in m.graph.node:
        a = attrs(n)
        if n.op_type == "Clip" and not ({"min", "max"} <= a.keys() and len(n.input) == 1):
            sys.exit(f"Clip is not the attribute form: {n}")
        if n.op_type in ("Unsqueeze", "Squeeze", "ReduceSum") and "axes" not in a:
            sys.exit(f"{n.op_type} without axes attribute: {n}")
        if n.op_type == "Upsample" and (a.get("mode") != b"nearest" or len(n.input) != 2):
            sys.exit(f"Upsample is not nearest with a scales input: {n}")
    keepdims = sorted(attrs(n).get("keepdims", 1) for n in m.graph.node
                      if n.op_type == "ReduceSum")
    if keepdims != [0, 1]:
        sys.exit(f"ReduceSum keepdims {keepdims}, want one of each")


def main():
    # torch warns that opset-9 Upsample/Squeeze are imprecise for dynamic shapes
    # and about constant folding with PRESERVE; none applies to this static,
    # eval-mode graph, whose output is checked against torch below.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    os.makedirs(os.path.join(OUT_DIR, "test_data_set_0"), exist_ok=True)
    path = os.path.join(OUT_DIR, "model.onnx")

    model = make_torch_model()
    m = export(model, path)
    initializers_to_constants(m)
    m.producer_name = "qfuse models/make_opset9_model.py (torch export + onnx rewrite)"
    onnx.checker.check_model(m, full_check=True)
    check_forms(m)
    onnx.save(m, path)

    # Shape inference must give every intermediate and the output a full shape.
    inferred = shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    out_dims = [d.dim_value for d in inferred.graph.output[0].type.tensor_type.shape.dim]
    if out_dims != [1, 6]:
        sys.exit(f"inferred output shape {out_dims}")
    untyped = [v.name for v in inferred.graph.value_info
               if not v.type.tensor_type.HasField("shape")]
    if untyped:
        sys.exit(f"no inferred shape for {untyped}")

    x = torch.from_numpy(
        np.random.default_rng(SEED).standard_normal(INPUT_SHAPE).astype(np.float32))
    with torch.no_grad():
        expected = model(x).numpy()
    ref = onnx_numpy_ref.run(m, {"input": x.numpy()})["output"]
    err = np.abs(ref - expected).max()
    if err > 1e-4:
        sys.exit(f"NumPy evaluation of the final graph disagrees with torch: {err}")

    for name, arr, fname in (("input", x.numpy(), "input_0.pb"),
                             ("output", expected, "output_0.pb")):
        t = numpy_helper.from_array(np.ascontiguousarray(arr, dtype=np.float32), name)
        with open(os.path.join(OUT_DIR, "test_data_set_0", fname), "wb") as f:
            f.write(t.SerializeToString())

    size = os.path.getsize(path)
    if size >= 100 * 1024:
        sys.exit(f"{path}: {size} bytes, over 100 KB")
    print(f"{os.path.relpath(path)}: {size} bytes, opset {m.opset_import[0].version}, "
          f"numpy-vs-torch max |diff| {err:.2e}")
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for n in m.graph.node:
        a = {k.name: helper.get_attribute_value(k) for k in n.attribute if k.name != "value"}
        a = {k: v.decode() if isinstance(v, bytes) else v for k, v in a.items()}
        print(f"  {n.op_type:<18} {list(n.input)} -> {list(n.output)} "
              f"{shapes.get(n.output[0], '')} {a if a else ''}")
    print(f"  expected output: {np.array2string(expected, precision=4)}")


if __name__ == "__main__":
    main()
