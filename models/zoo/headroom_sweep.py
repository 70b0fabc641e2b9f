#!/usr/bin/env python3
"""qfuse's output SQNR at level full with --activation_headroom=K against PyTorch FX, per zoo CNN.

For each architecture with an fx.json (fx_peer.py), quantizes out/zoo/<arch>/opset13.onnx with
the default calibration (`auto`) and every activation threshold times K, on the same 64
calibration and 64 evaluation images as FX, and prints pooled / median-per-image output SQNR
(dB) next to FX's and whether both are at least FX's. K = 1 is the default. docs/zoo.md
quotes this table.

  /usr/bin/python3 models/zoo/headroom_sweep.py [--zoo out/zoo] [--k 1,1.5,1.65,2] [--only a,b]
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUANTIZE = os.path.join(ROOT, "bazel-bin", "tools", "quantize", "quantize")


def quantize(zoo, arch, k, out):
    d = os.path.join(zoo, arch)
    work = os.path.join(out, f"{arch}-k{k}")
    args = [QUANTIZE, f"--model={d}/opset13.onnx", f"--calib_data={d}/calib.npy", f"--eval_data={d}/eval.npy",
            "--calib_samples=64", "--eval_samples=64", "--analysis_samples=0", "--fusion=full",
            f"--activation_headroom={k}", f"--output={work}"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(work, "report.json")) as f:
        o = json.load(f)["levels"][0]["outputs"][0]
    return o["sqnr_db"], o["median_sample_sqnr_db"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zoo", default="out/zoo")
    p.add_argument("--out", default="out/headroom")
    p.add_argument("--k", default="1,1.5,1.65,2")
    p.add_argument("--only", default="")
    a = p.parse_args()
    archs = sorted(x for x in os.listdir(a.zoo) if os.path.exists(os.path.join(a.zoo, x, "fx.json")))
    if a.only:
        archs = [x for x in archs if x in a.only.split(",")]
    for k in a.k.split(","):
        passed = compared = 0
        print(f"K = {k}: arch, qfuse pooled / median, FX pooled / median, both >= FX")
        for arch in archs:
            with open(os.path.join(a.zoo, arch, "fx.json")) as f:
                fx = json.load(f)
            if not fx.get("ok"):
                continue
            pooled, median = quantize(a.zoo, arch, k, a.out)
            ok = pooled >= fx["sqnr_db"] and median >= fx["median_sample_sqnr_db"]
            passed += ok
            compared += 1
            print(f"  {arch:28s} {pooled:6.2f} / {median:6.2f}   FX {fx['sqnr_db']:6.2f} / "
                  f"{fx['median_sample_sqnr_db']:6.2f}   {'yes' if ok else 'no'}", flush=True)
        print(f"K = {k}: at or above FX on {passed} of {compared} (FX cannot trace the others)", flush=True)


if __name__ == "__main__":
    main()
