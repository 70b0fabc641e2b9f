"""Times PyTorch FX post-training static quantization calibration on a sample model.

The PyTorch side of tools/bench/calib_vs_pytorch.sh: the same model, the same
samples and the same thread count as `bazel-bin/tools/calibrate --calib_samples=512
--method=entropy --threads=2 --batch_size=32`, calibrated by PyTorch FX instead.

  1. Rebuilds the nn.Module from the classes in models/make_sample_models.py and
     loads its weights from the ONNX initializers (their names are the module's
     state_dict keys), then checks the module's logits on
     models/<name>/test_data_set_0/input_0.pb against output_0.pb (max |diff|
     must be <= 1e-4, else exit 1 before any timing).
  2. prepare_fx with a QConfig of HistogramObserver activations and per-channel
     symmetric int8 weights (timed separately; in eval mode it also fuses
     Conv+BN(+ReLU)).
  3. Calibration loop (the timed figure): the first --samples training images,
     pixel/255 float32 NCHW, in batches of --batch under torch.no_grad().
  4. convert_fx (timed separately: this is where HistogramObserver computes its
     qparams, i.e. its threshold search), then a sanity check of the int8 model
     against the float one on the 100 stored test inputs.

Prints human-readable lines and one machine-readable `RESULT key=value ...` line.

Threads: torch uses OpenMP. With libgomp's default (active, spinning) wait policy,
2 threads on 2 cores that other processes also use lose most of their time in
barriers (on a loaded machine whole calibrations measured up to ~20x slower, and
very variable, versus PASSIVE; single batches up to 70x).
calib_vs_pytorch.sh therefore runs this script with OMP_WAIT_POLICY=PASSIVE, which
must be set in the environment before torch is imported; the value in effect is
printed.

Run:  /usr/bin/python3 tools/bench/pytorch_calibration.py --model=resnet_small
      (from anywhere; --model is a name under models/ or a path to a model.onnx)
"""

import argparse
import copy
import os
import resource
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))
import make_sample_models as sample_models  # noqa: E402  (needs models/ on sys.path)

MODEL_CLASSES = {
    "resnet_small": sample_models.ResNetSmall,
    "mobilenetv2_small": sample_models.MobileNetV2Small,
}
DEFAULT_DATA = os.path.join(sample_models.DATA_DIR, "train-images-idx3-ubyte.gz")
TOLERANCE = 1e-4


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def model_name_and_path(arg):
    if arg in MODEL_CLASSES:
        return arg, os.path.join(REPO, "models", arg, "model.onnx")
    path = os.path.abspath(arg)
    name = os.path.basename(os.path.dirname(path))
    if name not in MODEL_CLASSES:
        sys.exit(f"{arg}: not one of the sample models {sorted(MODEL_CLASSES)}")
    return name, path


def load_module(name, onnx_path):
    """The eval-mode nn.Module with its weights taken from the ONNX initializers."""
    module = MODEL_CLASSES[name]()
    m = onnx.load(onnx_path)
    inits = {t.name: t for t in m.graph.initializer}
    state = module.state_dict()
    new_state, missing = {}, []
    for key, ref in state.items():
        if key in inits:
            arr = numpy_helper.to_array(inits[key])
            if tuple(arr.shape) != tuple(ref.shape):
                sys.exit(f"{onnx_path}: initializer {key} has shape {arr.shape}, "
                         f"module expects {tuple(ref.shape)}")
            new_state[key] = torch.from_numpy(arr.copy()).to(ref.dtype)
        elif key.endswith("num_batches_tracked"):
            new_state[key] = ref  # training-only counter, not exported
        else:
            missing.append(key)
    if missing:
        sys.exit(f"{onnx_path}: no initializer for {missing}")
    # Initializers that are not state_dict entries must be the Clip bounds of ReLU6.
    for key in set(inits) - set(state):
        value = numpy_helper.to_array(inits[key])
        if value.size != 1 or float(value) not in (0.0, 6.0):
            sys.exit(f"{onnx_path}: unexpected initializer {key} = {value}")
    module.load_state_dict(new_state, strict=True)
    module.eval()
    return module


def read_tensor_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).copy()  # writable, for torch.from_numpy


def verify(module, model_dir):
    ds = os.path.join(model_dir, "test_data_set_0")
    x = read_tensor_pb(os.path.join(ds, "input_0.pb"))
    want = read_tensor_pb(os.path.join(ds, "output_0.pb"))
    with torch.no_grad():
        got = module(torch.from_numpy(x)).numpy()
    err = float(np.abs(got - want).max())
    print(f"verify: PyTorch logits vs {ds}/output_0.pb on {len(x)} images: "
          f"max |diff| {err:.2e} (tolerance {TOLERANCE:g})")
    if not err <= TOLERANCE:
        sys.exit(f"verify failed: max |diff| {err} > {TOLERANCE}")
    return torch.from_numpy(x), torch.from_numpy(want), err


def load_samples(path, count):
    """First `count` images, pixel/255 float32 [N,1,28,28] (as make_sample_models.py)."""
    images = sample_models.read_idx_gz(path)[:count]
    if len(images) < count:
        sys.exit(f"{path}: only {len(images)} images, asked for {count}")
    x = (images.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return torch.from_numpy(np.ascontiguousarray(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="resnet_small",
                    help=f"one of {sorted(MODEL_CLASSES)} or models/<name>/model.onnx")
    ap.add_argument("--data", default=DEFAULT_DATA, help="IDX image file (gzip or plain)")
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", default="",
                    help="torch.backends.quantized.engine (default: fbgemm if present, "
                         "else onednn, else qnnpack)")
    ap.add_argument("--list_observed", action="store_true",
                    help="print the graph nodes whose outputs are observed")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    engines = torch.backends.quantized.supported_engines
    engine = args.engine or next(e for e in ("fbgemm", "x86", "onednn", "qnnpack", "none")
                                 if e in engines)
    torch.backends.quantized.engine = engine

    from torch.ao.quantization import QConfig, QConfigMapping
    from torch.ao.quantization.observer import HistogramObserver, PerChannelMinMaxObserver
    from torch.ao.quantization.quantize_fx import convert_fx, fuse_fx, prepare_fx

    name, onnx_path = model_name_and_path(args.model)
    module = load_module(name, onnx_path)
    test_x, test_want, verify_err = verify(module, os.path.dirname(onnx_path))
    samples = load_samples(args.data, args.samples)
    rss_before = peak_rss_mib()

    # reduce_range only matters for fbgemm/x86 (their VNNI-less int8 path).
    reduce_range = engine in ("fbgemm", "x86")
    qconfig = QConfig(
        activation=HistogramObserver.with_args(reduce_range=reduce_range),
        weight=PerChannelMinMaxObserver.with_args(dtype=torch.qint8,
                                                  qscheme=torch.per_channel_symmetric))
    qconfig_mapping = QConfigMapping().set_global(qconfig)

    t0 = time.perf_counter()
    prepared = prepare_fx(module, qconfig_mapping, example_inputs=(samples[:1],))
    prepare_s = time.perf_counter() - t0
    # Observer modules, and the places the graph calls them (FX shares one observer
    # between a tensor and e.g. the flatten of it, so calls >= modules): each call
    # is one histogram update per batch.
    act_observers = {n for n, m in prepared.named_modules() if isinstance(m, HistogramObserver)}
    observer_calls = [str(node.args[0]) for node in prepared.graph.nodes
                      if node.op == "call_module" and node.target in act_observers]
    # Weight observers are only instantiated by convert_fx (one per Conv/Linear).
    weighted = [n for n, m in prepared.named_modules()
                if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]

    # The timed calibration loop.
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, args.samples, args.batch):
            prepared(samples[i:i + args.batch])
    calib_s = time.perf_counter() - t0
    rss_calib = peak_rss_mib()

    t0 = time.perf_counter()
    quantized = convert_fx(prepared)
    convert_s = time.perf_counter() - t0

    # Float forward of the same batches through the same Conv+BN(+ReLU)-fused float
    # graph without observers: the part of the calibration time that is inference.
    fused = fuse_fx(copy.deepcopy(module))
    t0 = time.perf_counter()
    with torch.no_grad():
        for i in range(0, args.samples, args.batch):
            fused(samples[i:i + args.batch])
    fp32_s = time.perf_counter() - t0

    # Sanity: the int8 model must still classify like the float one.
    with torch.no_grad():
        q_logits = quantized(test_x)
    agree = float((q_logits.argmax(1) == test_want.argmax(1)).float().mean())
    q_err = float((q_logits - test_want).abs().max())

    wait_policy = os.environ.get("OMP_WAIT_POLICY", "unset")
    print(f"model: {onnx_path} ({name}), torch {torch.__version__}, engine {engine}, "
          f"threads {torch.get_num_threads()}, OMP_WAIT_POLICY {wait_policy}")
    print(f"observers: {len(act_observers)} activation HistogramObserver modules called at "
          f"{len(observer_calls)} places; {len(weighted)} Conv/Linear get a per-channel "
          f"weight observer at convert (after prepare_fx's Conv+BN(+ReLU) fusion)")
    if args.list_observed:
        print("observed: " + " ".join(observer_calls))
    print(f"prepare_fx: {prepare_s:.3f} s")
    print(f"calibration: {args.samples} samples, batch {args.batch}: {calib_s:.3f} s "
          f"({args.samples / calib_s:.0f} samples/s)")
    print(f"convert_fx (incl. HistogramObserver qparams search): {convert_s:.3f} s; "
          f"calibration + convert {calib_s + convert_s:.3f} s "
          f"({args.samples / (calib_s + convert_s):.0f} samples/s)")
    print(f"fused float forward of the same batches, no observers: {fp32_s:.3f} s "
          f"(observer overhead {calib_s - fp32_s:+.3f} s)")
    print(f"int8 vs float on the {len(test_x)} test inputs: top-1 agreement {agree:.2f}, "
          f"max |logit diff| {q_err:.3f}")
    print(f"peak RSS: {rss_before:.1f} MiB before prepare_fx, {rss_calib:.1f} MiB after "
          f"calibration, {peak_rss_mib():.1f} MiB at exit")
    print(f"RESULT model={name} samples={args.samples} batch={args.batch} "
          f"threads={torch.get_num_threads()} engine={engine} omp_wait_policy={wait_policy} "
          f"act_observers={len(act_observers)} observer_calls={len(observer_calls)} "
          f"weighted_modules={len(weighted)} "
          f"verify_err={verify_err:.3e} prepare_s={prepare_s:.4f} calib_s={calib_s:.4f} "
          f"convert_s={convert_s:.4f} fp32_fwd_s={fp32_s:.4f} "
          f"int8_top1_agree={agree:.3f} peak_rss_mib={peak_rss_mib():.1f}")


if __name__ == "__main__":
    main()
