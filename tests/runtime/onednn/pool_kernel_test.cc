// The oneDNN pooling kernels against the hand-written ones (checked against ONNX's node
// tests) on random inputs: a Conv (blocked output) feeding MaxPool, AveragePool and the
// global pools, over ceil_mode, padding, count_include_pad and channel counts that do not
// fill a block; outputs and observed values compared in plain layout.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/engine_compare.h"
#include "tests/testing/graph_builder.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::GraphBuilder;

struct PoolCase {
  int64_t channels, size, kernel, stride, pad;
  bool ceil_mode, count_include_pad;
};

class OneDnnPoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(OneDnnPoolTest, EqualsHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const PoolCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 3, c.size, c.size + 2});
  ir::Value* conv = b.Op("Conv", {x, b.Random("w", {c.channels, 3, 3, 3}), b.Random("bias", {c.channels})}, "conv",
                         {-1, c.channels, c.size, c.size + 2},
                         GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  const std::vector<int64_t> pads = {c.pad, c.pad, c.pad, c.pad};
  const std::vector<int64_t> window = {c.kernel, c.kernel}, strides = {c.stride, c.stride};
  ir::Value* max = b.Op("MaxPool", {conv}, "max", {-1, c.channels, -1, -1},
                        GraphBuilder::Attrs({{"kernel_shape", window},
                                             {"strides", strides},
                                             {"pads", pads},
                                             {"ceil_mode", int64_t{c.ceil_mode}}}));
  ir::Value* avg = b.Op("AveragePool", {conv}, "avg", {-1, c.channels, -1, -1},
                        GraphBuilder::Attrs({{"kernel_shape", window},
                                             {"strides", strides},
                                             {"pads", pads},
                                             {"count_include_pad", int64_t{c.count_include_pad}}}));
  b.Output(max);
  b.Output(avg);
  b.Output(b.Op("GlobalAveragePool", {max}, "gap", {-1, c.channels, 1, 1}));
  b.Output(b.Op("GlobalMaxPool", {avg}, "gmp", {-1, c.channels, 1, 1}));
  for (int64_t batch : {1, 2}) ExpectEnginesAgree(b.graph(), batch);
}

INSTANTIATE_TEST_SUITE_P(Pools, OneDnnPoolTest,
                         ::testing::Values(PoolCase{16, 9, 3, 2, 1, false, false},  // the ResNet stem pool
                                           PoolCase{13, 8, 3, 2, 0, true, true},    // ceil mode, partial block
                                           PoolCase{24, 7, 2, 2, 0, false, false},
                                           PoolCase{40, 6, 3, 1, 1, true, true}),
                         [](const ::testing::TestParamInfo<PoolCase>& info) {
                           const PoolCase& c = info.param;
                           return absl::StrCat("c", c.channels, "_k", c.kernel, "_s", c.stride, "_p", c.pad,
                                               c.ceil_mode ? "_ceil" : "", c.count_include_pad ? "_incpad" : "");
                         });

}  // namespace
}  // namespace qfuse::runtime::onednn
