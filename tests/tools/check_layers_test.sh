#!/usr/bin/env bash
# tools/check_layers.py on small made-up trees: includes down a layer pass; an include up a
# layer or across to a sibling layer fails naming the file, the line and both layers; the
# reference kernels (runtime/reference) may not include the kernels they check; the data
# readers may not include the runtime, and base/ includes nothing of the project.
set -euo pipefail
check="$1"
tree="$TEST_TMPDIR/tree"
fail() { echo "check_layers_test: $*"; exit 1; }

make_tree() {
  rm -rf "$tree"
  mkdir -p "$tree/ir" "$tree/runtime" "$tree/fusion" "$tree/calib" "$tree/quant"
  printf '#include "ir/graph.h"\n#include "numerics/requantize.h"\n#include "absl/status/status.h"\n' >"$tree/runtime/kernel.cc"
  printf '#include "runtime/executor.h"\n' >"$tree/fusion/equivalence.cc"
  printf '#include "calib/calibration_table.h"\n#include "fusion/pipeline.h"\n' >"$tree/quant/converter.h"
  printf '// no project includes\n' >"$tree/ir/graph.h"
  mkdir -p "$tree/runtime/reference"
  printf '#include "ir/tensor.h"\n#include "runtime/reference/conv.h"\n' >"$tree/runtime/reference/gemm.cc"
}

make_tree
out="$(/usr/bin/python3 "$check" --root "$tree")" || fail "a tree that only includes downwards failed: $out"

make_tree
printf '#include "ir/graph.h"\n#include "quant/converter.h"\n' >"$tree/runtime/kernel.cc"
if out="$(/usr/bin/python3 "$check" --root "$tree")"; then fail "runtime including quant passed"; fi
grep -q '^runtime/kernel.cc:2: layer runtime includes quant/converter.h of layer quant$' <<<"$out" || fail "got: $out"

make_tree
printf '#include "calib/histogram.h"\n' >"$tree/fusion/equivalence.cc"
if out="$(/usr/bin/python3 "$check" --root "$tree")"; then fail "fusion including its sibling calib passed"; fi
grep -q 'fusion/equivalence.cc:1: layer fusion includes calib/histogram.h of layer calib' <<<"$out" || fail "got: $out"
grep -q ', 1 include(s) going up or across a layer$' <<<"$out" || fail "got: $out"
make_tree
printf '#include "ir/tensor.h"\n#include "runtime/kernels/linalg/linalg.h"\n' >"$tree/runtime/reference/gemm.cc"
if out="$(/usr/bin/python3 "$check" --root "$tree")"; then fail "runtime/reference including a kernel passed"; fi
grep -q '^runtime/reference/gemm.cc:2: runtime/reference includes runtime/kernels/linalg/linalg.h' <<<"$out" || fail "got: $out"
make_tree
mkdir -p "$tree/data" "$tree/base"
printf '#include "base/status_macros.h"\n#include "ir/tensor.h"\n' >"$tree/data/npy.cc"
out="$(/usr/bin/python3 "$check" --root "$tree")" || fail "data including base and ir failed: $out"
printf '#include "runtime/executor.h"\n' >"$tree/data/dataset.h"
if out="$(/usr/bin/python3 "$check" --root "$tree")"; then fail "data including the runtime passed"; fi
grep -q '^data/dataset.h:1: layer data includes runtime/executor.h of layer runtime$' <<<"$out" || fail "got: $out"
printf '#include "ir/graph.h"\n' >"$tree/base/file_util.h"
if out="$(/usr/bin/python3 "$check" --root "$tree")"; then fail "base including ir passed"; fi
echo "check_layers_test: 6 trees checked"
