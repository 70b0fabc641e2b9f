#!/usr/bin/python3
"""Independent numpy reference for qfuse's calibration thresholds (calib/thresholds.h), and the
generator of tests/testdata/calib/threshold_cases.json, which tests/calib/thresholds_test.cc checks
the C++ against, to the bin.

Written from the algorithm descriptions, not from the C++ (whole-array numpy instead of
prefix sums and loops). Notation: n bins of width w, counts c, N = sum(c), A = max|x|;
candidate thresholds are the bin edges e_j = j * w; a method picks an edge j and returns
T = min(j * w, A) (in float64, then float32). Ties of exactly equal scores go to the larger j.

  max         j = last non-empty bin + 1.
  percentile  smallest j >= 1 with cumsum(c)[j-1] >= percentile / 100 * N.
  entropy     for i = M..top (M = number of quantized levels; top = max(M, max's j): the
              searches end at the last occupied bin's top): P = c[:i] with sum(c[i:]) added
              to P[i-1]; bins j < i form M groups floor(j * M / i); Q[j] = group sum / number
              of non-empty bins in the group where c[j] > 0, else 0; KL(P/N || Q/sum(c[:i]))
              over P > 0, +inf if Q == 0 where P > 0 (no smoothing). Pick the minimum.
  mse         for j = M..top: T_j = j (units of w), L = M - 1, bin centres x = b + 0.5,
              k = min(rint(x * L / T_j), L) (half to even), error = sum c * (x - k * T_j / L)^2.

  entropy_skip_zero_spike  entropy on counts with c[0] replaced by c[1] (pytorch-quantization's
              guard against the spike of exact zeros after ReLU).

Special cases: all-zero histogram -> T = 1.0, edge 0 (every method). T is floored at
256 * FLT_MIN so T / 255 stays a normal float.

Usage: /usr/bin/python3 calib/reference/thresholds_reference.py [--out PATH]
Needs only numpy (Debian python3-numpy); seeds are fixed, so the output is reproducible.
"""

import argparse
import json
import pathlib

import numpy as np

NUM_BINS = 2048
ZERO_RANGE_THRESHOLD = 1.0
MIN_THRESHOLD = 256 * float(np.finfo(np.float32).tiny)
# Expected-value keys: the four methods plus entropy with ThresholdOptions::entropy_skip_zero_spike.
METHODS = ("entropy", "percentile", "mse", "max", "entropy_skip_zero_spike")


# ----------------------------------------------------------------------------------------------
# Threshold methods. Each takes the histogram (int64 counts, float32 width, float32 max|x|) and
# returns (score per candidate edge as a dict or None, chosen edge).


def edge_threshold(edge, width, amax):
    t = min(float(edge) * float(width), float(amax))
    return max(float(np.float32(t)), MIN_THRESHOLD)


def pick_largest_minimum(scores):
    """scores: dict edge -> score. Returns the largest edge among the exact minima."""
    best = min(scores.values())
    return max(e for e, s in scores.items() if s == best)


def max_edge(counts):
    return int(np.flatnonzero(counts).max()) + 1


def percentile_edge(counts, percentile):
    target = percentile / 100.0 * float(counts.sum())
    reached = np.cumsum(counts) >= target  # reached[j-1]: the first j bins hold >= target
    return int(np.argmax(reached)) + 1


def entropy_scores(counts, levels, top):
    total = float(counts.sum())
    scores = {}
    for i in range(levels, top + 1):
        kept = counts[:i]
        tail = counts[i:].sum()
        ref = kept.copy()
        ref[-1] += tail
        group = (np.arange(i, dtype=np.int64) * levels) // i
        group_sum = np.bincount(group, weights=kept.astype(np.float64), minlength=levels)
        group_nonempty = np.bincount(group, weights=(kept > 0).astype(np.float64), minlength=levels)
        cand = np.zeros(i, dtype=np.float64)
        filled = kept > 0
        cand[filled] = group_sum[group[filled]] / group_nonempty[group[filled]]
        kept_total = float(kept.sum())
        support = ref > 0
        if kept_total == 0 or np.any(cand[support] == 0):
            scores[i] = float("inf")
            continue
        p = ref[support].astype(np.float64) / total
        q = cand[support] / kept_total
        scores[i] = float(np.sum(p * np.log(p / q)))
    return scores


def mse_scores(counts, levels, top):
    steps = float(levels - 1)
    occupied = np.flatnonzero(counts)
    x = occupied.astype(np.float64) + 0.5
    weight = counts[occupied].astype(np.float64)
    scores = {}
    for j in range(levels, top + 1):
        t = float(j)
        k = np.minimum(np.rint(x * steps / t), steps)
        d = x - k * t / steps
        scores[j] = float(np.sum(weight * (d * d)))
    return scores


def relative_margin(scores, chosen):
    """Relative gap between the chosen score and the best score of any other edge whose score
    differs (0 if only exact ties exist). Guards the 'agree to the bin' claim against
    summation-order noise between numpy and C++."""
    best = scores[chosen]
    others = [s for e, s in scores.items() if s != best and np.isfinite(s)]
    if not others:
        return None
    runner_up = min(others)
    return (runner_up - best) / max(abs(best), abs(runner_up), 1e-300)


def compute_all(counts, width, amax, levels, percentile):
    """Returns {method: {"threshold", "edge"}} and {method: relative margin}."""
    if amax == 0:
        return {m: {"threshold": ZERO_RANGE_THRESHOLD, "edge": 0} for m in METHODS}, {}
    edges = {"max": max_edge(counts), "percentile": percentile_edge(counts, percentile)}
    search_top = max(edges["max"], levels)  # the searched edges end at the last occupied bin's top
    margins = {}
    zero_spike_flattened = counts.copy()
    zero_spike_flattened[0] = counts[1]
    for name, fn, c in (("entropy", entropy_scores, counts), ("mse", mse_scores, counts),
                        ("entropy_skip_zero_spike", entropy_scores, zero_spike_flattened)):
        scores = fn(c, levels, search_top)
        edges[name] = pick_largest_minimum(scores)
        margins[name] = relative_margin(scores, edges[name])
    expected = {m: {"threshold": edge_threshold(edges[m], width, amax), "edge": edges[m]} for m in METHODS}
    return expected, margins


# ----------------------------------------------------------------------------------------------
# Fixture histograms: |x| in NUM_BINS bins on [0, NUM_BINS * w), binned as AbsHistogram bins one
# batch: w the smallest power of two (at least FLT_MIN) with w * NUM_BINS > max|x|, bin
# floor(|x| * (1 / w)) in float32 (exact, and below NUM_BINS, as w is a power of two).


def abs_histogram(values):
    values = np.asarray(values, dtype=np.float32)
    a = np.abs(values)
    amax = np.float32(a.max())
    if amax == 0:
        counts = np.zeros(NUM_BINS, dtype=np.int64)
        counts[0] = values.size
        return counts, np.float32(0), values
    width = np.float32(np.finfo(np.float32).tiny)
    while float(width) * NUM_BINS <= float(amax):
        width = np.float32(width * 2)
    idx = (a * (np.float32(1) / width)).astype(np.int64)
    assert idx.max() < NUM_BINS
    counts = np.bincount(idx, minlength=NUM_BINS).astype(np.int64)
    return counts, width, values


def make_cases():
    rng = np.random.default_rng(20240611)
    cases = []

    gauss = rng.standard_normal(1_000_000).astype(np.float32)
    outliers = (rng.uniform(20.0, 30.0, 8) * rng.choice([-1.0, 1.0], 8)).astype(np.float32)
    cases.append(("gaussian_outliers", "N(0,1) x 1e6 plus 8 outliers with |x| in [20, 30]",
                  np.concatenate([gauss, outliers]), 128))

    cases.append(("uniform", "U(-1, 1) x 1e6", rng.uniform(-1.0, 1.0, 1_000_000).astype(np.float32), 128))

    cases.append(("all_zeros", "1000 zeros (range never set)", np.zeros(1000, dtype=np.float32), 128))

    spike = np.full(1000, 3.5, dtype=np.float32)
    spike[::2] = -3.5
    cases.append(("single_spike", "500 x 3.5 and 500 x -3.5: all mass in one bin", spike, 128))

    relu = np.maximum(rng.standard_normal(1_000_000), 0.0).astype(np.float32)
    cases.append(("relu_half_normal", "max(N(0,1), 0) x 1e6 (about half exact zeros), uint8: 256 levels",
                  relu, 256))

    out = []
    for name, description, values, levels in cases:
        counts, width, values = abs_histogram(values)
        vmin, vmax = np.float32(values.min()), np.float32(values.max())
        amax = max(abs(float(vmin)), abs(float(vmax)))
        percentile = 99.99
        expected, margins = compute_all(counts, width, amax, levels, percentile)
        for method, margin in margins.items():
            if margin is not None and margin < 1e-9:
                raise SystemExit(f"{name}/{method}: best and runner-up scores within {margin:.3g} (relative); "
                                 "the C++ may legitimately pick another bin: change the fixture")
        out.append({
            "name": name,
            "description": description,
            "num_quantized_bins": levels,
            "percentile": percentile,
            "bin_width": float(width),
            "min": float(vmin),
            "max": float(vmax),
            "count": int(counts.sum()),
            "expected": expected,
            "score_margins": {m: v for m, v in margins.items()},
            "bins": [int(v) for v in counts],
        })
    return out


def write_json(cases, path):
    # One line per scalar field, the bins on one line: readable diffs without 10k lines.
    lines = ["{", '  "generator": "calib/reference/thresholds_reference.py",',
             f'  "num_bins": {NUM_BINS},', '  "cases": [']
    for ci, case in enumerate(cases):
        fields = [f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in case.items()]
        lines.append("   {")
        lines.append(",\n".join(fields))
        lines.append("   }" + ("," if ci + 1 < len(cases) else ""))
    lines += ["  ]", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # well-formed
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=root / "tests/testdata/calib/threshold_cases.json")
    args = parser.parse_args()
    cases = make_cases()
    write_json(cases, args.out)
    for case in cases:
        summary = ", ".join(f"{m} {e['threshold']:.6g} (edge {e['edge']})" for m, e in case["expected"].items())
        print(f"{case['name']}: max|x| {max(abs(case['min']), abs(case['max'])):.6g}, width {case['bin_width']:.6g}: {summary}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
