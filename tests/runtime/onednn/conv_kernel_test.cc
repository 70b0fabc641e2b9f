// The oneDNN convolution kernels against the hand-written ones (themselves checked
// against ONNX's node tests) on random inputs: chains of two Conv units so the second
// reads the first's channel-blocked output and residual (and a unit with the plain graph input
// as its residual), over strides, dilations, groups,
// paddings, channel counts that do not fill a block, every activation, batch 1 and 3. The
// observer and the graph outputs must see plain tensors equal to the hand-written path's.
#include "runtime/onednn/conv_kernel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/cpu_isa.h"
#include "runtime/onednn/onednn_engine.h"
#include "tests/runtime/onednn/engine_compare.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::GraphBuilder;

struct ConvCase {
  int64_t in_channels, mid_channels, size, kernel, stride, dilation, pad;
  bool depthwise_second;  // the second unit is depthwise (group = channels)
  ir::UnitActivation activation;
};

std::string CaseName(const ::testing::TestParamInfo<ConvCase>& info) {
  const ConvCase& c = info.param;
  return absl::StrCat("c", c.in_channels, "_m", c.mid_channels, "_s", c.size, "_k", c.kernel, "_st", c.stride, "_d",
                      c.dilation, "_p", c.pad, c.depthwise_second ? "_dw_" : "_", ir::UnitActivationName(c.activation));
}

ir::Node* AddUnit(GraphBuilder& b, const std::string& name, ir::UnitSpec spec, std::vector<ir::Value*> inputs,
                  const ir::AttributeMap& conv_attrs, int64_t out_channels) {
  ir::AttributeMap attrs = conv_attrs;
  ir::WriteUnitSpec(spec, &attrs);
  ir::Node* unit = *b.graph().AddNode(ir::kUnitOpType, name, inputs, {name + "_y"}, attrs, ir::kQfuseDomain);
  ir::TensorType type{ir::DataType::kFloat32, inputs[0]->type().shape, {}};
  type.shape.dims[1] = ir::Dim::Known(out_channels);
  for (int d = 2; d < 4; ++d) type.shape.dims[d] = ir::Dim{};
  unit->output(0)->mutable_type() = type;
  return unit;
}

class OneDnnConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(OneDnnConvTest, EqualsHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  const ConvCase& c = GetParam();
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, c.in_channels, c.size, c.size + 1});
  ir::AttributeMap first;
  first.Set("strides", std::vector<int64_t>{c.stride, c.stride});
  first.Set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
  first.Set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad + 1, c.pad});
  ir::UnitSpec spec;
  spec.base_op = ir::UnitBaseOp::kConv;
  spec.activation = c.activation;
  spec.clip_min = c.activation == ir::UnitActivation::kClip ? -0.25f : 0.f;
  spec.clip_max = c.activation == ir::UnitActivation::kClip ? 0.5f : 6.f;
  spec.alpha = c.activation == ir::UnitActivation::kLeakyRelu ? 0.1f : 0.3f;
  spec.beta = 0.4f;
  ir::Node* a = AddUnit(
      b, "a", spec,
      {x, b.Random("wa", {c.mid_channels, c.in_channels, c.kernel, c.kernel}), b.Random("ba", {c.mid_channels})}, first,
      c.mid_channels);
  // Second unit: 3x3 (depthwise or full), same size, the first's output as residual.
  ir::AttributeMap second;
  second.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const int64_t group = c.depthwise_second ? c.mid_channels : 1;
  second.Set("group", group);
  ir::Node* u = AddUnit(b, "b", spec,
                        {a->output(0), b.Random("wb", {c.mid_channels, c.mid_channels / group, 3, 3}),
                         b.Random("bb", {c.mid_channels}), a->output(0)},
                        second, c.mid_channels);
  b.Output(a->output(0));
  b.Output(u->output(0));
  for (int64_t batch : {1, 3}) ExpectEnginesAgree(b.graph(), batch);
}

// A unit whose residual is the plain graph input (reordered into the destination for a sum
// post-op) and one whose residual is a blocked unit output (read in place by a binary add
// post-op): both equal the hand-written kernels.
TEST(OneDnnConvResidualTest, PlainAndBlockedResidualsEqualHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 20, 9, 9});
  ir::AttributeMap same;
  same.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::UnitSpec spec;
  spec.base_op = ir::UnitBaseOp::kConv;
  spec.activation = ir::UnitActivation::kRelu;
  ir::Node* a = AddUnit(b, "a", spec, {x, b.Random("wa", {20, 20, 3, 3}), b.Random("ba", {20}), x}, same, 20);
  ir::Node* u = AddUnit(b, "b", spec,
                        {a->output(0), b.Random("wb", {20, 20, 3, 3}), b.Random("bb", {20}), a->output(0)}, same, 20);
  b.Output(u->output(0));
  for (int64_t batch : {1, 2}) ExpectEnginesAgree(b.graph(), batch);
}

// Layers with many weights and few output pixels at batch 1 run channels-last on oneDNN's
// brgconv kernels (conv_kernel.cc): a unit on the plain graph input with that input as its
// plain residual, a unit on a blocked input with a blocked residual, channel counts that do not
// fill a block, and a strided layer. Batch 1 takes that form (where AVX-512 is allowed, below it
// oneDNN has no brgconv kernel), batch 2 the blocked one; both equal the hand-written kernels.
// Three units of the channels-last form at batch 1: on the plain graph input with that input
// as its plain residual, on a blocked input with a blocked residual, and strided; 200 and 152
// channels do not fill a block.
void BuildManyWeightsChain(GraphBuilder& b) {
  ir::Value* x = b.Input("x", {-1, 200, 6, 5});
  ir::AttributeMap same;
  same.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::AttributeMap strided = same;
  strided.Set("strides", std::vector<int64_t>{2, 2});
  ir::UnitSpec spec;
  spec.base_op = ir::UnitBaseOp::kConv;
  spec.activation = ir::UnitActivation::kRelu;
  ir::Node* a = AddUnit(b, "a", spec, {x, b.Random("wa", {200, 200, 3, 3}), b.Random("ba", {200}), x}, same, 200);
  ir::Node* u = AddUnit(
      b, "b", spec, {a->output(0), b.Random("wb", {200, 200, 3, 3}), b.Random("bb", {200}), a->output(0)}, same, 200);
  ir::UnitSpec plain;
  plain.base_op = ir::UnitBaseOp::kConv;
  ir::Node* s =
      AddUnit(b, "s", plain, {u->output(0), b.Random("ws", {152, 200, 3, 3}), b.Random("bs", {152})}, strided, 152);
  b.Output(s->output(0));
}

TEST(OneDnnConvChannelsLastTest, SmallImagesWithManyWeightsEqualHandWrittenKernels) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  GraphBuilder b;
  BuildManyWeightsChain(b);
  const int64_t before = ChannelsLastConvPrimitives();
  ExpectEnginesAgree(b.graph(), 1);
  if (IsaAllowed(Isa::kAvx512)) EXPECT_EQ(ChannelsLastConvPrimitives() - before, 3);
  const int64_t after_one = ChannelsLastConvPrimitives();
  ExpectEnginesAgree(b.graph(), 2);
  EXPECT_EQ(ChannelsLastConvPrimitives(), after_one);
}

// DeepLabV3's atrous convolutions: 3x3 dilated far beyond the 8x8 map (dilation 12, padding 12).
// In the blocked layout oneDNN has only its reference kernel for them at batch 8 (3 s per
// convolution in DeepLabV3-MobileNetV3 at 128x128); the channels-last form runs them (brgconv on
// AVX-512, oneDNN's GEMM convolution below it), with the hand-written kernels' results.
TEST(OneDnnConvReferenceTest, AtrousConvolutionsAvoidTheReferenceKernel) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, 960, 8, 8});
  ir::AttributeMap atrous;
  atrous.Set("pads", std::vector<int64_t>{12, 12, 12, 12});
  atrous.Set("dilations", std::vector<int64_t>{12, 12});
  ir::UnitSpec spec;
  spec.base_op = ir::UnitBaseOp::kConv;
  spec.activation = ir::UnitActivation::kRelu;
  ir::Node* a = AddUnit(b, "a", spec, {x, b.Random("wa", {64, 960, 3, 3}), b.Random("ba", {64})}, atrous, 64);
  b.Output(a->output(0));
  const int64_t before = ReferenceConvolutionsAvoided();
  const int64_t channels_last_before = ChannelsLastConvPrimitives();
  ExpectEnginesAgree(b.graph(), 8);
  EXPECT_EQ(ReferenceConvolutionsAvoided() - before, 1);
  EXPECT_EQ(ChannelsLastConvPrimitives() - channels_last_before, 1);
}

// Two threads run one executor at once on different images, each many times: every run gives
// the output its image gives alone. The channels-last primitives are shared between the runs,
// and brgconv keeps per-run state in its scratchpad, so each run passes its own.
TEST(OneDnnConvChannelsLastTest, ConcurrentRunsGiveEachImagesOwnOutput) {
  if (!UseOneDnn()) GTEST_SKIP() << "oneDNN is not used at this ISA cap / engine setting";
  GraphBuilder b;
  BuildManyWeightsChain(b);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph()));
  std::vector<std::vector<NamedTensor>> inputs;
  std::vector<std::vector<float>> want;
  for (uint32_t seed : {3u, 4u}) {
    RandomInputOptions random;
    random.seed = seed;
    random.low = -1.f;
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> in, RandomInputs(b.graph(), random));
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> out, exec->Run(in, RunOptions()));
    const absl::Span<const float> v = out[0].tensor.values<float>();
    want.emplace_back(v.begin(), v.end());
    inputs.push_back(std::move(in));
  }
  ASSERT_NE(want[0], want[1]);
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < 40; ++run) {
        absl::StatusOr<std::vector<NamedTensor>> out = exec->Run(inputs[t], RunOptions());
        if (!out.ok()) {
          ++failures;
          continue;
        }
        const absl::Span<const float> v = (*out)[0].tensor.values<float>();
        if (!std::equal(v.begin(), v.end(), want[t].begin(), want[t].end())) ++mismatches;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

std::vector<ConvCase> Cases() {
  std::vector<ConvCase> cases = {
      {1, 16, 9, 3, 1, 1, 1, false, ir::UnitActivation::kRelu},   // first layer: 1 channel, plain input
      {3, 13, 11, 3, 2, 1, 1, true, ir::UnitActivation::kRelu6},  // 13 channels: a partial block
      {8, 24, 8, 1, 1, 1, 0, false, ir::UnitActivation::kNone},   // pointwise
      {24, 40, 10, 3, 2, 2, 2, true, ir::UnitActivation::kClip},  // dilated, strided, plain input of 24 channels
      {5, 32, 7, 5, 1, 1, 2, false, ir::UnitActivation::kHardSwish},
      {16, 17, 6, 3, 1, 1, 0, true, ir::UnitActivation::kHardSigmoid},  // no padding: the output shrinks
      {4, 20, 9, 3, 2, 1, 0, false, ir::UnitActivation::kSigmoid},      // a trailing row dropped by the stride
      {6, 8, 5, 3, 1, 1, 1, true, ir::UnitActivation::kSilu},
      {2, 48, 6, 3, 1, 1, 1, false, ir::UnitActivation::kLeakyRelu},
  };
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Units, OneDnnConvTest, ::testing::ValuesIn(Cases()), CaseName);

}  // namespace
}  // namespace qfuse::runtime::onednn
