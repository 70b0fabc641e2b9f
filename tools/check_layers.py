"""Fails when a source file includes a header of a higher layer (or of a sibling layer).

The layers, lowest first (docs/architecture.md draws them); a folder may include headers of
its own folder and of the folders listed as below it, nothing else of the project:

  base       status macros, checked size arithmetic, atomic files, interrupt cleanup
  numerics   pure integer/float arithmetic of quantization                 over base
  ir         graph, tensors, types, ONNX import/export, the unit spec, int8 forms  over base
  runtime    executor and kernels (float, integer, oneDNN)        over ir, numerics, base
  data       readers (IDX, .npy, .pb, images, raw, in-memory) batched to a model  over ir, base
  fusion     graph rewrites (passes, pipeline, equivalence check)  over runtime, ir, ...
  calib      histograms, thresholds, calibrator, tables             over data, runtime, ...
  quant      QDQ conversion, deploy targets, weight quantization  over calib, fusion, ...
  pipeline   quantize / evaluate / analyse / compare as a library over quant, ...
  tools, python   command lines and the Python module              over pipeline, ...
tests/ may include anything. Third-party headers (absl, onnx, ...) are not checked.
A few sub-folders have a narrower rule than their layer (NARROWER): runtime/reference, the
scalar oracle of the optimised kernels, includes only ir/ and numerics/, never the kernels.

  /usr/bin/python3 tools/check_layers.py [--root DIR]
Prints one line per violation "file:line: layer X includes Y of layer Z" and a summary line;
exits 1 on any violation. tools/test.sh runs it.
"""
import argparse
import os
import re
import sys

# folder -> the project folders it may include (besides itself).
ALLOWED = {
    "base": set(),
    "numerics": {"base"},
    "ir": {"base"},
    "runtime": {"ir", "numerics", "base"},
    "data": {"ir", "base"},
    "fusion": {"runtime", "ir", "numerics", "base"},
    "calib": {"data", "runtime", "ir", "numerics", "base"},
    "quant": {"calib", "data", "fusion", "runtime", "ir", "numerics", "base"},
    "pipeline": {"quant", "calib", "data", "fusion", "runtime", "ir", "numerics", "base"},
    "tools": {"pipeline", "quant", "calib", "data", "fusion", "runtime", "ir", "numerics", "base"},
    "python": {"pipeline", "quant", "calib", "data", "fusion", "runtime", "ir", "numerics", "base"},
}
# sub-folder -> the project folders it may include (besides itself); narrower than its layer's.
NARROWER = {
    "runtime/reference": {"ir", "numerics", "base"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def violations(root):
    found = []
    checked = 0
    for layer in sorted(ALLOWED):
        for dirpath, _, names in os.walk(os.path.join(root, layer)):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                narrower = next((f for f in NARROWER if rel.startswith(f + "/")), None)
                checked += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        target = m.group(1).split("/")[0]
                        if narrower is not None:
                            if (m.group(1).startswith(narrower + "/") or target not in ALLOWED
                                    or target in NARROWER[narrower]):
                                continue
                            found.append(f"{rel}:{number}: {narrower} includes {m.group(1)} (it may include "
                                         f"only {', '.join(sorted(NARROWER[narrower]))} and itself)")
                            continue
                        if target == layer or target not in ALLOWED or target in ALLOWED[layer]:
                            continue
                        found.append(f"{rel}:{number}: layer {layer} includes {m.group(1)} of layer {target}")
    return checked, found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    checked, found = violations(args.root)
    for v in found:
        print(v)
    print(f"layers: {checked} files checked, {len(found)} include(s) going up or across a layer")
    return 1 if found or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
