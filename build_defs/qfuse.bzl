"""Common C++ rules for qfuse: every library, binary and test gets the same warnings."""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

QFUSE_COPTS = [
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-sign-compare",
]

def qfuse_cc_library(name, copts = [], **kwargs):
    cc_library(name = name, copts = QFUSE_COPTS + copts, **kwargs)

def qfuse_cc_binary(name, copts = [], **kwargs):
    cc_binary(name = name, copts = QFUSE_COPTS + copts, **kwargs)

def qfuse_cc_test(name, copts = [], deps = [], **kwargs):
    cc_test(
        name = name,
        copts = QFUSE_COPTS + copts,
        deps = deps + ["//third_party:gtest_main"],
        **kwargs
    )
