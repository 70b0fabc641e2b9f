"""An ONNX graph as a torch.nn.Module that PyTorch FX can trace and quantize (the PaddleOCR FX peer).

PyTorch FX post-training quantization needs a PyTorch model; the PaddleOCR models exist here
only as paddle2onnx files. `OnnxModule` rebuilds one from the ONNX file with the same weights,
as a PyTorch port would write it:
  - Conv / ConvTranspose / BatchNormalization / MatMul with a constant 2-D weight (and a following
    Add of a constant bias) become nn.Conv2d / nn.ConvTranspose2d / nn.BatchNorm2d / nn.Linear;
  - paddle2onnx's written-out activations are recognised and become the module a port would use:
    `t * Clip(t + 3, 0, 6) / 6` -> nn.Hardswish, `t * Sigmoid(t * 1)` -> nn.SiLU,
    HardSigmoid(alpha 1/6, beta 1/2) -> nn.Hardsigmoid, the opset-9 LayerNorm chain
    (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta) -> nn.LayerNorm,
    Relu -> nn.ReLU, Clip(0, 6) -> nn.ReLU6, nearest Resize by whole factors -> nn.Upsample;
  - scalar constants stay Python floats (FX quantizes `x * c` / `x + c` as scalar ops);
  - shape arithmetic (Shape, Cast, Slice, Concat, ... of shapes) is evaluated once for the batch
    size and image size the module is built for, so every Reshape has a fixed target; the module
    then runs batches of exactly that shape.
Anything else raises NotImplementedError naming the node, so a model it cannot express is refused,
not approximated. `check_fp32` compares the module's float output with a reference.
"""

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

SHAPE_OPS = {"Shape", "Cast", "Slice", "Concat", "Gather", "Squeeze", "Unsqueeze", "Add", "Sub", "Mul", "Div",
             "Reshape", "Identity"}


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _fold(node, args):
    """A node over numpy constants (shape arithmetic), as ONNX defines it."""
    op, at = node.op_type, _attrs(node)
    if op == "Shape":
        return np.array(args[0].shape, np.int64)
    if op == "Cast":
        return args[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[at["to"]])
    if op == "Identity":
        return args[0]
    if op == "Concat":
        return np.concatenate(args, axis=at["axis"])
    if op == "Slice":
        if "starts" in at:  # opset < 10: attributes
            starts, ends, axes = at["starts"], at["ends"], at.get("axes", list(range(len(at["starts"]))))
            steps = [1] * len(starts)
        else:
            starts, ends = list(args[1]), list(args[2])
            axes = list(args[3]) if len(args) > 3 else list(range(len(starts)))
            steps = list(args[4]) if len(args) > 4 else [1] * len(starts)
        index = [slice(None)] * args[0].ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[a] = slice(int(s), int(min(e, 2**62)), int(st))
        return args[0][tuple(index)]
    if op == "Gather":
        return np.take(args[0], args[1], axis=at.get("axis", 0))
    if op == "Squeeze":
        axes = at["axes"] if "axes" in at else (list(args[1]) if len(args) > 1 else None)
        return np.squeeze(args[0], axis=tuple(int(a) for a in axes) if axes is not None else None)
    if op == "Unsqueeze":
        out = args[0]
        for a in sorted(at["axes"] if "axes" in at else [int(v) for v in args[1]]):
            out = np.expand_dims(out, a)
        return out
    if op == "Reshape":
        return args[0].reshape([d if d != 0 else args[0].shape[i] for i, d in enumerate(args[1])])
    if op in ("Add", "Sub", "Mul", "Div"):
        a, b = args
        r = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}.get(op)
        # ONNX's integer Div truncates toward zero
        return r(a, b) if r else (np.trunc(a / b).astype(a.dtype) if a.dtype.kind in "iu" else a / b)
    raise NotImplementedError(op)


def _scalar(v):
    return v is not None and isinstance(v, np.ndarray) and v.size == 1


class OnnxModule(nn.Module):
    """The ONNX graph at `path` for inputs of exactly `input_shape` (batch included); `outputs`:
    other values to return instead of the graph outputs (to find where two runs part);
    `fold_affine`: scalar `* k + c` after a convolution folded into its weights and bias."""

    def __init__(self, path, input_shape, outputs=None, fold_affine=False):
        super().__init__()
        self.fold_affine = fold_affine
        model = onnx.load(path)
        g = model.graph
        self.opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        const = {t.name: numpy_helper.to_array(t).copy() for t in g.initializer}
        nodes = []
        for n in g.node:
            if n.op_type == "Constant":
                const[n.output[0]] = numpy_helper.to_array(_attrs(n)["value"]).copy()
            else:
                nodes.append(n)
        inputs = [i.name for i in g.input if i.name not in const]
        if len(inputs) != 1:
            raise NotImplementedError(f"{path}: {len(inputs)} graph inputs (one expected)")
        self.input_name = inputs[0]
        self.output_names = list(outputs) if outputs else [o.name for o in g.output]
        self.const = const
        self.users = {}
        for n in nodes:
            for i in n.input:
                self.users.setdefault(i, []).append(n)
        self.mods = nn.ModuleDict()
        self.steps = []  # (kind, payload, input names, output name)
        self._build(nodes, tuple(input_shape))

    # ---- graph reading helpers
    def _only_user(self, name, op):
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 and users[0].op_type == op else None

    def _c(self, name):
        return self.const.get(name)

    def _add_module(self, node, module):
        key = "m%d" % len(self.mods)
        self.mods[key] = module.eval()  # BatchNorm2d: the model's statistics, never the batch's
        return key

    # ---- pattern recognisers: each returns (steps to add, nodes consumed) or None
    def _hardswish(self, add):
        # t + 3 -> Clip(0, 6) -> t * clip -> / 6
        x = [i for i in add.input if not _scalar(self._c(i))]
        k = [self._c(i) for i in add.input if _scalar(self._c(i))]
        if len(x) != 1 or len(k) != 1 or float(k[0]) != 3.0:
            return None
        clip = self._only_user(add.output[0], "Clip")
        if clip is None or self._clip_bounds(clip) != (0.0, 6.0):
            return None
        mul = self._only_user(clip.output[0], "Mul")
        if mul is None or set(mul.input) != {x[0], clip.output[0]}:
            return None
        div = self._only_user(mul.output[0], "Div")
        if div is None or div.input[0] != mul.output[0] or not _scalar(self._c(div.input[1])) or \
                float(self._c(div.input[1])) != 6.0:
            return None
        return [("module", self._add_module(div, nn.Hardswish()), [x[0]], div.output[0])], [add, clip, mul, div]

    def _silu(self, first):
        # x * Sigmoid(x [* 1]) -> SiLU
        if first.op_type == "Mul":
            x = [i for i in first.input if not _scalar(self._c(i))]
            k = [self._c(i) for i in first.input if _scalar(self._c(i))]
            if len(x) != 1 or len(k) != 1 or float(k[0]) != 1.0:
                return None
            sig = self._only_user(first.output[0], "Sigmoid")
            chain = [first, sig]
        else:
            x, sig, chain = [first.input[0]], first, [first]
        if sig is None:
            return None
        mul = self._only_user(sig.output[0], "Mul")
        if mul is None or set(mul.input) != {x[0], sig.output[0]}:
            return None
        return [("module", self._add_module(mul, nn.SiLU()), x, mul.output[0])], chain + [mul]

    def _layernorm(self, mean):
        at = _attrs(mean)
        if at.get("axes") != [-1]:
            return None
        x = mean.input[0]
        sub = self._only_user(mean.output[0], "Sub")
        if sub is None or list(sub.input) != [x, mean.output[0]] or len(self.users.get(sub.output[0], [])) != 2:
            return None
        pow_, div = None, None
        for u in self.users.get(sub.output[0], []):
            if u.op_type == "Pow" and _scalar(self._c(u.input[1])) and float(self._c(u.input[1])) == 2.0:
                pow_ = u
            elif u.op_type == "Div" and u.input[0] == sub.output[0]:
                div = u
        if pow_ is None or div is None:
            return None
        var = self._only_user(pow_.output[0], "ReduceMean")
        eps = self._only_user(var.output[0], "Add") if var is not None else None
        sqrt = self._only_user(eps.output[0], "Sqrt") if eps is not None else None
        if sqrt is None or div.input[1] != sqrt.output[0] or _attrs(var).get("axes") != [-1]:
            return None
        eps_v = self._c(eps.input[1])
        mul = self._only_user(div.output[0], "Mul")
        add = self._only_user(mul.output[0], "Add") if mul is not None else None
        if add is None or not _scalar(eps_v):
            return None
        gamma, beta = self._c(mul.input[1]), self._c(add.input[1])
        if gamma is None or beta is None or gamma.ndim != 1 or beta.shape != gamma.shape:
            return None
        ln = nn.LayerNorm(gamma.shape[0], eps=float(eps_v))
        with torch.no_grad():
            ln.weight.copy_(torch.from_numpy(gamma))
            ln.bias.copy_(torch.from_numpy(beta))
        return [("module", self._add_module(add, ln), [x], add.output[0])], [mean, sub, pow_, var, eps, sqrt, div, mul, add]

    def _linear(self, matmul):
        w = self._c(matmul.input[1])
        if w is None or w.ndim != 2:
            return None
        lin = nn.Linear(w.shape[0], w.shape[1], bias=False)
        consumed, out = [matmul], matmul.output[0]
        add = self._only_user(matmul.output[0], "Add")
        if add is not None:
            b = self._c(add.input[1]) if add.input[0] == matmul.output[0] else self._c(add.input[0])
            if b is not None and b.shape == (w.shape[1],):
                lin = nn.Linear(w.shape[0], w.shape[1], bias=True)
                with torch.no_grad():
                    lin.bias.copy_(torch.from_numpy(b))
                consumed, out = [matmul, add], add.output[0]
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(w.T)))
        return [("module", self._add_module(matmul, lin), [matmul.input[0]], out)], consumed

    def _conv_epilogue(self, conv):
        # Conv / ConvTranspose followed by an Add of a per-channel constant: the layer's bias. With
        # fold_affine, also a following `* k` and `+ c` by scalars (PP-LCNetV3's learnable affine
        # blocks): weights and bias scaled by k, c added to the bias.
        m = self._conv(conv)
        scale, shift = 1.0, torch.zeros(m.out_channels, dtype=torch.float64)
        consumed, out = [conv], conv.output[0]
        while True:
            users = self.users.get(out, [])
            user = users[0] if len(users) == 1 and out not in self.output_names else None
            if user is None or user.op_type not in ("Add", "Mul"):
                break
            other = user.input[1] if user.input[0] == out else user.input[0]
            k = self._c(other)
            if k is None:
                break
            if user.op_type == "Add" and k.ndim == 4 and k.size == m.out_channels and k.shape[1] == m.out_channels:
                shift += torch.from_numpy(k.reshape(-1).astype(np.float64))
            elif self.fold_affine and _scalar(k) and user.op_type == "Mul":
                scale, shift = scale * float(k), shift * float(k)
            elif self.fold_affine and _scalar(k):
                shift += float(k)
            else:
                break
            consumed.append(user)
            out = user.output[0]
        if len(consumed) == 1:
            return None
        with torch.no_grad():
            bias = m.bias.detach().double() if m.bias is not None else torch.zeros(m.out_channels, dtype=torch.float64)
            m.weight.mul_(scale)
            m.bias = nn.Parameter((bias * scale + shift).float())
        return [("module", self._add_module(conv, m), [conv.input[0]], out)], consumed

    def _clip_bounds(self, clip):
        at = _attrs(clip)
        if "min" in at or "max" in at:
            return float(at.get("min", -np.inf)), float(at.get("max", np.inf))
        for bound in clip.input[1:]:
            if bound and self._c(bound) is None:
                raise NotImplementedError(f"node {clip.name}: Clip with a bound computed at run time")
        lo = self._c(clip.input[1]) if len(clip.input) > 1 and clip.input[1] else None
        hi = self._c(clip.input[2]) if len(clip.input) > 2 and clip.input[2] else None
        return (float(lo) if lo is not None else -np.inf), (float(hi) if hi is not None else np.inf)

    # ---- single nodes
    def _conv(self, n):
        at, w = _attrs(n), self._c(n.input[1])
        b = self._c(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        pads = at.get("pads", [0, 0, 0, 0])
        if w is None or len(pads) != 4 or pads[:2] != pads[2:] or at.get("auto_pad", b"NOTSET") != b"NOTSET":
            raise NotImplementedError(f"node {n.name}: {n.op_type} form")
        k = tuple(w.shape[2:])
        common = dict(kernel_size=k, stride=tuple(at.get("strides", [1, 1])), padding=tuple(pads[:2]),
                      dilation=tuple(at.get("dilations", [1, 1])), groups=at.get("group", 1), bias=b is not None)
        if n.op_type == "Conv":
            m = nn.Conv2d(w.shape[1] * common["groups"], w.shape[0], **common)
        else:
            if at.get("output_padding", [0, 0]) != [0, 0] or "output_shape" in at:
                raise NotImplementedError(f"node {n.name}: ConvTranspose output_padding/output_shape")
            m = nn.ConvTranspose2d(w.shape[0], w.shape[1] * common["groups"], **common)
        with torch.no_grad():
            m.weight.copy_(torch.from_numpy(w))
            if b is not None:
                m.bias.copy_(torch.from_numpy(b))
        return m

    def _single(self, n, shapes):
        op, at, c = n.op_type, _attrs(n), self._c
        x = n.input[0]
        if op in ("Conv", "ConvTranspose"):
            return ("module", self._add_module(n, self._conv(n)), [x])
        if op == "BatchNormalization":
            scale, bias, mean, var = (c(i) for i in n.input[1:5])
            m = nn.BatchNorm2d(scale.shape[0], eps=at.get("epsilon", 1e-5))
            with torch.no_grad():
                for t, v in ((m.weight, scale), (m.bias, bias), (m.running_mean, mean), (m.running_var, var)):
                    t.copy_(torch.from_numpy(v))
            return ("module", self._add_module(n, m), [x])
        if op == "Relu":
            return ("module", self._add_module(n, nn.ReLU()), [x])
        if op == "Clip":
            lo, hi = self._clip_bounds(n)
            m = nn.ReLU6() if (lo, hi) == (0.0, 6.0) else nn.Hardtanh(lo, hi)
            return ("module", self._add_module(n, m), [x])
        if op == "HardSigmoid":
            alpha, beta = at.get("alpha", 0.2), at.get("beta", 0.5)
            if abs(alpha - 1 / 6) < 1e-6 and beta == 0.5:
                return ("module", self._add_module(n, nn.Hardsigmoid()), [x])
            return ("hardsigmoid", (float(alpha), float(beta)), [x])
        if op == "Sigmoid":
            return ("module", self._add_module(n, nn.Sigmoid()), [x])
        if op == "GlobalAveragePool":
            return ("module", self._add_module(n, nn.AdaptiveAvgPool2d(1)), [x])
        if op in ("AveragePool", "MaxPool"):
            pads = at.get("pads", [0, 0, 0, 0])
            if pads[:2] != pads[2:] or at.get("ceil_mode", 0) or at.get("auto_pad", b"NOTSET") != b"NOTSET" or \
                    any(d != 1 for d in at.get("dilations", [1, 1])):
                raise NotImplementedError(f"node {n.name}: {op} form (pads, ceil_mode, auto_pad, dilations)")
            kw = dict(kernel_size=tuple(at["kernel_shape"]), stride=tuple(at.get("strides", at["kernel_shape"])),
                      padding=tuple(pads[:2]))
            m = nn.MaxPool2d(**kw) if op == "MaxPool" else \
                nn.AvgPool2d(count_include_pad=bool(at.get("count_include_pad", 0)), **kw)
            return ("module", self._add_module(n, m), [x])
        if op == "Resize":
            scales = c(n.input[2]) if len(n.input) > 2 and n.input[2] else None
            # nn.Upsample's nearest is ONNX's asymmetric / floor (exact for whole factors)
            if at.get("mode", b"nearest") != b"nearest" or scales is None or scales.size != 4 or \
                    at.get("coordinate_transformation_mode", b"half_pixel") != b"asymmetric" or \
                    at.get("nearest_mode", b"round_prefer_floor") != b"floor" or \
                    list(scales[:2]) != [1, 1] or any(s != int(s) for s in scales[2:]):
                raise NotImplementedError(f"node {n.name}: Resize form")
            return ("module", self._add_module(n, nn.Upsample(scale_factor=tuple(float(s) for s in scales[2:]),
                                                              mode="nearest")), [x])
        if op == "Softmax":
            rank = len(shapes[x])
            axis = at.get("axis", -1 if self.opset >= 13 else 1)
            if self.opset < 13 and axis % rank != rank - 1:
                raise NotImplementedError(f"node {n.name}: opset<13 Softmax not over the last axis")
            return ("module", self._add_module(n, nn.Softmax(dim=axis)), [x])
        if op in ("Add", "Sub", "Mul", "Div"):
            a, b = n.input
            if c(a) is not None and c(b) is not None:
                raise AssertionError("folded earlier")
            if c(a) is not None or c(b) is not None:
                k = c(a) if c(a) is not None else c(b)
                if not _scalar(k) or k.ndim > len(shapes[b if c(a) is not None else a]):
                    raise NotImplementedError(f"node {n.name}: {op} with a constant tensor of shape {k.shape}")
                return ("scalar", (op, float(k), c(a) is not None), [b if c(a) is not None else a])
            return ("binary", op, [a, b])
        if op == "Concat":
            return ("concat", at["axis"], list(n.input))
        if op == "Reshape":
            target = c(n.input[1])
            shape = [int(d) if d != 0 else shapes[x][i] for i, d in enumerate(target)]
            return ("reshape", tuple(shape), [x])
        if op == "Transpose":
            return ("permute", tuple(at["perm"]), [x])
        if op == "Squeeze":
            return ("squeeze", tuple(at["axes"]), [x])
        if op == "Slice":
            if "starts" not in at:
                raise NotImplementedError(f"node {n.name}: Slice with input bounds on a tensor")
            index = [slice(None)] * len(shapes[x])
            for s, e, a in zip(at["starts"], at["ends"], at.get("axes", range(len(at["starts"])))):
                index[a] = slice(s, min(e, 2**62))
            return ("index", tuple(index), [x])
        if op == "MatMul":
            return ("matmul", None, [n.input[0], n.input[1]])
        raise NotImplementedError(f"node {n.name}: {op}")

    def _build(self, nodes, input_shape):
        """Orders the steps, folds shape arithmetic for `input_shape`, and records value shapes
        by running the graph once on zeros."""
        done = set()
        env = {self.input_name: torch.zeros(input_shape)}
        with torch.no_grad():
            for n in nodes:
                if id(n) in done:
                    continue
                args = [self.const[i] if i in self.const else env.get(i) for i in n.input if i]
                if n.op_type in SHAPE_OPS and all(isinstance(a, np.ndarray) for a in args) or \
                        n.op_type == "Shape":
                    self.const[n.output[0]] = _fold(n, [a if isinstance(a, np.ndarray) else a.numpy()
                                                        for a in args])
                    done.add(id(n))
                    continue
                found = None
                if n.op_type == "Add":
                    found = self._hardswish(n)
                elif n.op_type in ("Mul", "Sigmoid"):
                    found = self._silu(n)
                elif n.op_type == "ReduceMean":
                    found = self._layernorm(n)
                elif n.op_type == "MatMul":
                    found = self._linear(n)
                elif n.op_type in ("Conv", "ConvTranspose"):
                    found = self._conv_epilogue(n)
                if found is None:
                    shapes = {i: tuple(env[i].shape) for i in n.input if i in env}
                    kind, payload, ins = self._single(n, shapes)
                    found = ([(kind, payload, ins, n.output[0])], [n])
                steps, consumed = found
                for step in steps:
                    self.steps.append(step)
                    env[step[3]] = self._run_step(step, env)
                done.update(id(m) for m in consumed)
        missing = [o for o in self.output_names if o not in env]
        if missing:
            raise NotImplementedError(f"outputs not computed: {missing}")

    def _run_step(self, step, env):
        kind, payload, ins, _ = step
        x = env[ins[0]]
        if kind == "module":
            return self.mods[payload](x)
        if kind == "scalar":
            op, k, const_first = payload
            if op == "Add":
                return x + k
            if op == "Mul":
                return x * k
            if op == "Sub":
                return k - x if const_first else x - k
            return k / x if const_first else x / k
        if kind == "binary":
            y = env[ins[1]]
            return {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}[payload](x, y)
        if kind == "hardsigmoid":
            alpha, beta = payload
            return F.hardtanh(x * alpha + beta, 0.0, 1.0)
        if kind == "concat":
            return torch.cat([env[i] for i in ins], dim=payload)
        if kind == "reshape":
            return torch.reshape(x, payload)
        if kind == "permute":
            return x.permute(*payload)
        if kind == "squeeze":
            for a in sorted(payload, reverse=True):
                x = x.squeeze(a)
            return x
        if kind == "index":
            return x[payload]
        if kind == "matmul":
            return torch.matmul(x, env[ins[1]])
        raise AssertionError(kind)

    def forward(self, x):
        env = {self.input_name: x}
        for step in self.steps:
            env[step[3]] = self._run_step(step, env)
        outs = [env[o] for o in self.output_names]
        return outs[0] if len(outs) == 1 else tuple(outs)


def run_batched(module, data, batch):
    """The module over `data` in batches of exactly `batch` (len(data) must be a multiple)."""
    if len(data) % batch:
        raise ValueError(f"{len(data)} samples is not a multiple of the batch {batch}")
    with torch.no_grad():
        return np.concatenate([module(torch.from_numpy(data[i:i + batch])).numpy()
                               for i in range(0, len(data), batch)])
