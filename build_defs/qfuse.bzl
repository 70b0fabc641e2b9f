"""Common C++ rules for qfuse: every library, binary and test gets the same warnings."""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

QFUSE_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-sign-compare",
]

# gcc's vectoriser cost model, for every library and binary (clang has no such flag). At -O2's
# default ("very-cheap"), gcc 12 vectorises only loops that need neither an epilogue nor an
# alias check, which left most kernels' row loops of arbitrary length scalar. Vector lanes
# round float arithmetic as scalar code does, and gcc does not reorder float reductions
# without -ffast-math, so results stay bit for bit (the tests and the zoo's onnxruntime
# comparison check it). ViT-tiny int8 `bn`, batch 8: its float Adds 0.77 -> 0.22 ms with the
# elementwise library alone; the rest of the build another 2-4% (docs/performance.md).
GCC_VECTORIZE_COPTS = select({
    "//build_defs:clang": [],
    "//conditions:default": ["-fvect-cost-model=dynamic"],
})

def qfuse_cc_library(name, copts = [], **kwargs):
    cc_library(name = name, copts = QFUSE_COPTS + GCC_VECTORIZE_COPTS + copts, **kwargs)

def qfuse_cc_binary(name, copts = [], **kwargs):
    cc_binary(name = name, copts = QFUSE_COPTS + GCC_VECTORIZE_COPTS + copts, **kwargs)

# Test sources (not the libraries they test) at -O1: their own code is assertions and small
# reference loops, and -O1 compiles them 10-17% faster than -O2 (measured on
# tests/quant/qdq_converter_test.cc and tests/pipeline/quantize_pipeline_test.cc).
TEST_COPTS = ["-O1"]

def qfuse_cc_test(name, copts = [], deps = [], **kwargs):
    cc_test(
        name = name,
        copts = QFUSE_COPTS + TEST_COPTS + copts,
        deps = deps + ["//third_party:gtest_main"],
        **kwargs
    )

def qfuse_fuzz_target(name, srcs, deps = [], local_defines = [], corpus = None):
    """A fuzz target in two forms.

    `name`: the libFuzzer binary (tag manual: it links only under --config=fuzz, with
    clang; see tools/fuzz.sh). `name_replay_test`: the same entry point run once over every
    file of the committed seed corpus `corpus/<corpus>/` by tests/fuzz/replay_main.cc, an
    ordinary test under any compiler and under --config=asan / --config=ubsan.
    """
    corpus = corpus or name
    cc_library(
        name = name + "_lib",
        srcs = srcs,
        copts = QFUSE_COPTS,
        local_defines = local_defines,
        deps = deps + ["//tests/fuzz:fuzz_input"],
        alwayslink = 1,
        testonly = 1,
    )
    cc_binary(
        name = name,
        deps = [":" + name + "_lib"],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        testonly = 1,
    )
    cc_test(
        name = name + "_replay_test",
        size = "small",
        srcs = ["//tests/fuzz:replay_main.cc"],
        copts = QFUSE_COPTS,
        deps = [":" + name + "_lib"],
        data = native.glob(["corpus/" + corpus + "/**"]),
        args = [native.package_name() + "/corpus/" + corpus],
    )
