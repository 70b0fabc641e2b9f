"""Counts the convolutions of int8 ONNX files whose int32 sums can pass 2^24 (oneDNN's jit int8
kernels then round them through float32; runtime/onednn/int8_conv_engine.h), by the bound qfuse
uses (255 times the larger of a channel's positive and negative weight sums, uint8 sources)
and by the cruder 255 * sum |w|.

    /usr/bin/python3 models/zoo/sum_bound.py out/bench/resnet18_224/model_int8_full.onnx ...

Weights are the 4-D INT8 initializers (QDQ convolutions) and the 4-D UINT8 ones centred at 128
(ConvInteger weights of the integer-head form); depthwise weights (one input channel) are left
out (9 taps cannot pass the bound).
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

LIMIT = 2**24


def main(paths):
    for path in paths:
        model = onnx.load(path)
        convs = by_abs = by_signed = 0
        worst = 0.0
        for t in model.graph.initializer:
            if t.data_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) or len(t.dims) != 4:
                continue
            if t.dims[1] == 1:
                continue
            w = numpy_helper.to_array(t).astype(np.int64)
            if t.data_type == onnx.TensorProto.UINT8:
                w = w - 128
            w = w.reshape(t.dims[0], -1)
            convs += 1
            signed = max(np.clip(w, 0, None).sum(1).max(), np.clip(-w, 0, None).sum(1).max())
            by_abs += 255 * np.abs(w).sum(1).max() > LIMIT
            by_signed += 255 * signed > LIMIT
            worst = max(worst, 255 * signed / LIMIT)
        print(f"{path}: {convs} convolutions, {by_signed} past 2^24 by the one-signed bound "
              f"(worst {worst:.2f} x 2^24), {by_abs} by 255 * sum |w|")


if __name__ == "__main__":
    main(sys.argv[1:])
