"""A tiny NumPy interpreter for the ONNX ops used by the sample models.

onnx 1.12 (Debian bookworm) has no onnx.reference module and onnxruntime is not
packaged, so the generator scripts use this to check that an exported graph
really computes the expected outputs they write to test_data_set_0/.

Supported ops (only the forms the sample models use): Constant, Conv,
BatchNormalization (inference), Relu, Clip (opset 6 attributes or opset 11+
inputs), Add, Mul, GlobalAveragePool, MaxPool (2-D, no padding, floor), Flatten, Gemm,
Upsample (nearest,
integer scales), ReduceSum (axes attribute), Unsqueeze / Squeeze (axes
attribute or input).

Not a script; imported by make_sample_models.py and make_opset9_model.py.
"""

import numpy as np
from onnx import helper, numpy_helper


def _conv(x, w, b, attrs):
    group = attrs.get("group", 1)
    strides = attrs.get("strides", [1, 1])
    pads = attrs.get("pads", [0, 0, 0, 0])
    dilations = attrs.get("dilations", [1, 1])
    if list(dilations) != [1, 1]:
        raise NotImplementedError("Conv dilations != 1")
    n, c, _, _ = x.shape
    m, cg, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    hp, wp = x.shape[2], x.shape[3]
    oh = (hp - kh) // strides[0] + 1
    ow = (wp - kw) // strides[1] + 1
    # patches[n, c, i, j, oh, ow] = x[n, c, i + sh*oh, j + sw*ow]
    patches = np.empty((n, c, kh, kw, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patches[:, :, i, j] = x[:, :, i:i + strides[0] * oh:strides[0],
                                    j:j + strides[1] * ow:strides[1]]
    mg = m // group
    out = np.empty((n, m, oh, ow), dtype=np.float64)
    for g in range(group):
        pg = patches[:, g * cg:(g + 1) * cg]
        wg = w[g * mg:(g + 1) * mg]
        out[:, g * mg:(g + 1) * mg] = np.einsum("nckluv,mckl->nmuv", pg, wg)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def _bcast_channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _axes(node, inputs, values, attrs):
    """Axes from the attribute (opset < 13) or the second input (opset 13+)."""
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    if len(node.input) > 1 and node.input[1]:
        return [int(a) for a in values[node.input[1]]]
    return None


def run(model, feeds):
    """Runs `model` (onnx.ModelProto) on `feeds` {name: ndarray} in float64.

    Returns a dict {output name: ndarray}.
    """
    values = {k: np.asarray(v, dtype=np.float64) if np.asarray(v).dtype.kind == "f"
              else np.asarray(v) for k, v in feeds.items()}
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        values[init.name] = arr.astype(np.float64) if arr.dtype.kind == "f" else arr

    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
        ins = [values[n] if n else None for n in node.input]
        op = node.op_type
        if op == "Constant":
            arr = numpy_helper.to_array(attrs["value"])
            out = arr.astype(np.float64) if arr.dtype.kind == "f" else arr
        elif op == "Conv":
            out = _conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs)
        elif op == "BatchNormalization":
            x, scale, bias, mean, var = ins[:5]
            eps = attrs.get("epsilon", 1e-5)
            nd = x.ndim
            out = ((x - _bcast_channel(mean, nd)) / np.sqrt(_bcast_channel(var, nd) + eps)
                   * _bcast_channel(scale, nd) + _bcast_channel(bias, nd))
        elif op == "Relu":
            out = np.maximum(ins[0], 0.0)
        elif op == "Clip":
            if "min" in attrs or "max" in attrs:  # opset 6-10 form
                lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
            else:  # opset 11+ form
                lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
                hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
            out = np.minimum(np.maximum(ins[0], lo), hi)
        elif op == "Add":
            out = ins[0] + ins[1]
        elif op == "Mul":
            out = ins[0] * ins[1]
        elif op == "MaxPool":
            kh, kw = attrs["kernel_shape"]
            sh, sw = attrs.get("strides", [1, 1])
            if any(attrs.get("pads", [0, 0, 0, 0])) or attrs.get("ceil_mode", 0):
                raise NotImplementedError("MaxPool with pads or ceil_mode")
            x = ins[0]
            oh = (x.shape[2] - kh) // sh + 1
            ow = (x.shape[3] - kw) // sw + 1
            out = np.full(x.shape[:2] + (oh, ow), -np.inf, dtype=x.dtype)
            for i in range(kh):
                for j in range(kw):
                    out = np.maximum(out, x[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw])
        elif op == "GlobalAveragePool":
            out = ins[0].mean(axis=tuple(range(2, ins[0].ndim)), keepdims=True)
        elif op == "Flatten":
            axis = attrs.get("axis", 1)
            x = ins[0]
            out = x.reshape(int(np.prod(x.shape[:axis])), -1)
        elif op == "Gemm":
            a, b = ins[0], ins[1]
            if attrs.get("transA", 0):
                a = a.T
            if attrs.get("transB", 0):
                b = b.T
            out = attrs.get("alpha", 1.0) * (a @ b)
            if len(ins) > 2 and ins[2] is not None:
                out = out + attrs.get("beta", 1.0) * ins[2]
        elif op == "Upsample":
            if attrs.get("mode", "nearest") != "nearest":
                raise NotImplementedError("Upsample mode " + attrs["mode"])
            scales = attrs["scales"] if "scales" in attrs else ins[1]
            out = ins[0]
            for axis, s in enumerate(scales):
                if float(s) != int(s):
                    raise NotImplementedError("non-integer Upsample scale")
                out = np.repeat(out, int(s), axis=axis)
        elif op == "ReduceSum":
            axes = _axes(node, ins, values, attrs)
            keep = bool(attrs.get("keepdims", 1))
            out = ins[0].sum(axis=None if axes is None else tuple(axes), keepdims=keep)
        elif op == "Unsqueeze":
            out = ins[0]
            rank = out.ndim + len(_axes(node, ins, values, attrs))
            for a in sorted(a % rank for a in _axes(node, ins, values, attrs)):
                out = np.expand_dims(out, a)
        elif op == "Squeeze":
            axes = _axes(node, ins, values, attrs)
            out = np.squeeze(ins[0], axis=None if axes is None else tuple(axes))
        else:
            raise NotImplementedError("op " + op)
        if len(node.output) != 1 and any(node.output[1:]):
            raise NotImplementedError(op + " with optional outputs")
        values[node.output[0]] = out

    return {o.name: values[o.name] for o in model.graph.output}
