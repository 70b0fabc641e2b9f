"""Prints issue 11's ratio table from the timings bench_vs_ort.sh wrote.

    python3 tools/ort/bench_table.py out/bench/timings.tsv

A row per (ISA cap, model, batch): median ms of qfuse fp32 (fused), qfuse int8 (full, bn),
onnxruntime fp32 and int8 (same files; measured without cap), then the target ratios, and the
rows met per cap:
  int8 speed-up   qfuse fp32 / qfuse int8 full       target >= 2 (batch 64/16), >= 1.5 (batch 1)
  7-bit speed-up  qfuse fp32 / qfuse int8 full with --reduce_range --activation_dtype=uint8
                  (7-bit weights, uint8 activations; same target, informational)
  vs ORT int8     ORT int8 bn / qfuse int8 bn        target >= 1.2
  vs ORT exact    ORT int8 bn with session.x64quantprecision=1 (exact u8 x u8 kernels) / qfuse int8 bn
                  (informational: the same as the above on VNNI machines)
  fp32 vs ORT     qfuse fp32 / ORT fp32              target <= 1.2
"""
import csv
import sys
from collections import defaultdict


def main(path):
    ms = defaultdict(dict)
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            ms[(row["cap"], row["model"], int(row["batch"]))][row["runtime"]] = float(row["ms"])
    ort = {(m, b): v for (cap, m, b), v in ms.items() if cap == "none"}
    print("| ISA cap | model | batch | qfuse fp32 | qfuse int8 full | qfuse int8 bn | ORT fp32 | ORT int8 full |"
          " ORT int8 bn | int8 speed-up (target) | vs ORT int8 bn (>= 1.2) | fp32 / ORT fp32 (<= 1.2) |"
          " qfuse int8 full 7-bit w, u8 act | 7-bit speed-up | ORT int8 bn exact | vs ORT exact |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|")
    met = defaultdict(lambda: [0, 0])  # (cap, target) -> [rows met, rows]
    cap_of_row = ["none"]

    def mark(name, ok):
        met[(cap_of_row[0], name)][0] += ok
        met[(cap_of_row[0], name)][1] += 1
        return "yes" if ok else "**no**"

    for (cap, model, batch), t in sorted(ms.items(), key=lambda kv: (kv[0][0] != "none", kv[0])):
        cap_of_row[0] = cap
        o = ort.get((model, batch), {})
        cells = [t.get("qfuse_fp32"), t.get("qfuse_int8_full"), t.get("qfuse_int8_bn"), o.get("ort_fp32"),
                 o.get("ort_int8_full"), o.get("ort_int8_bn")]
        if None in cells:
            continue
        fp32, full, bn, ort_fp32, _, ort_bn = cells
        speed_target = 1.5 if batch == 1 else 2.0
        speedup, vs_ort, fp32_ratio = fp32 / full, ort_bn / bn, fp32 / ort_fp32
        print(f"| {cap} | {model} | {batch} | " + " | ".join(f"{c:.3f}" for c in cells) +
              f" | {speedup:.2f} (>= {speed_target}) {mark('int8 speed-up', speedup >= speed_target)}"
              f" | {vs_ort:.2f} {mark('vs ORT int8', vs_ort >= 1.2)}"
              f" | {fp32_ratio:.2f} {mark('fp32 vs ORT', fp32_ratio <= 1.2)} |" +
              (f" {t['qfuse_int8_full_rr']:.3f} | {fp32 / t['qfuse_int8_full_rr']:.2f} |"
               if "qfuse_int8_full_rr" in t else " - | - |") +
              (f" {o['ort_int8_bn_exact']:.3f} | {o['ort_int8_bn_exact'] / bn:.2f} |"
               if "ort_int8_bn_exact" in o else " - | - |"))
        if "qfuse_int8_full_rr" in t:
            mark("7-bit int8 speed-up (informational)", fp32 / t["qfuse_int8_full_rr"] >= speed_target)
    print()
    for (cap, name), (ok, total) in met.items():
        print(f"ISA cap {cap}: {name}: met in {ok} of {total} rows")
    if any(cap != "none" for cap, _ in met):
        print("onnxruntime has no ISA cap: under a cap below the CPU's own level, the columns 'vs ORT' and"
              " 'fp32 / ORT' compare qfuse's capped paths with onnxruntime at the CPU's best ISA.")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/bench/timings.tsv")
