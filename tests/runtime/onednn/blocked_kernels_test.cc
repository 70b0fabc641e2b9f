// The channel-blocked Concat and qfuse.ChannelAffine (runtime/onednn/blocked_kernels.h):
//  - kernel level: the blocked Concat of whole blocks equals the plain Concat reordered to
//    blocks byte for byte, and takes the plain path for channels that do not fill blocks;
//    ChannelAffine equals x * s + b and Relu rounded as separate ops (the Mul, Add and Relu
//    kernels' arithmetic, written out here), on plain and blocked inputs, a partial last
//    block's zeros kept, NaN, infinities, signed zeros and subnormals included;
//  - graph level: Conv, Conv -> Concat -> Mul -> Add -> Relu (a DenseNet layer's input) with
//    the float chains fused and not, every output bit for bit.
#include "runtime/onednn/blocked_kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/executor.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/random_inputs.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::onednn {
namespace {

using testing::GraphBuilder;

ir::Tensor RandomPlain(const std::vector<int64_t>& dims, uint32_t seed) {
  ir::Tensor t(ir::DataType::kFloat32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (float& v : t.mutable_values<float>()) v = u(rng);
  return t;
}

ir::Tensor Blocked(const ThreadPool& pool, const ir::Tensor& plain) {
  ir::Tensor out = NewBlocked(plain.dims(), plain.dims()[1], BlockSize());
  PlainToBlocked(pool, plain, BlockSize(), out.raw_data());
  return out;
}

bool SameBytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

std::unique_ptr<Kernel> MakeKernel(GraphBuilder& b, const std::string& op, std::vector<ir::Value*> inputs,
                                   ir::AttributeMap attrs, bool qfuse_domain = false) {
  ir::Node* n =
      *b.graph().AddNode(op, "node_" + op, inputs, {"y"}, std::move(attrs), qfuse_domain ? ir::kQfuseDomain : "");
  auto kernel = op == "Concat" ? CreateConcatKernel(*n) : CreateChannelAffineKernel(*n);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return *std::move(kernel);
}

TEST(BlockedConcatTest, WholeBlocksConcatenateAsPlainAndOtherChannelsConvert) {
  if (!UseOneDnn()) GTEST_SKIP() << "no blocked layout without oneDNN";
  const ThreadPool pool(2);
  const int64_t block = BlockSize();
  for (const std::vector<int64_t>& channels :
       std::vector<std::vector<int64_t>>{{block, block}, {2 * block, block, 3 * block}, {block, 5}, {7, 3}}) {
    SCOPED_TRACE(::testing::Message() << channels[0] << " + " << channels[1] << " channels");
    GraphBuilder b;
    std::vector<ir::Value*> values;
    std::vector<ir::Tensor> plain, blocked;
    std::vector<TensorLayout> layouts;
    for (size_t i = 0; i < channels.size(); ++i) {
      values.push_back(b.Input("x" + std::to_string(i), {2, channels[i], 3, 5}));
      plain.push_back(RandomPlain({2, channels[i], 3, 5}, 10 + i));
      blocked.push_back(Blocked(pool, plain.back()));
      layouts.push_back({LayoutKind::kChannelBlocked, channels[i]});
    }
    std::unique_ptr<Kernel> concat = MakeKernel(b, "Concat", values, GraphBuilder::Attrs({{"axis", int64_t{1}}}));
    bool whole = true;
    int64_t total = 0;
    for (int64_t c : channels) {
      whole = whole && c % block == 0;
      total += c;
    }
    const std::optional<TensorLayout> planned = concat->layout_for_inputs(layouts);
    ASSERT_EQ(planned.has_value(), whole);
    // The plain reference: the same kernel on plain inputs.
    std::vector<const ir::Tensor*> plain_in, blocked_in;
    for (size_t i = 0; i < plain.size(); ++i) {
      plain_in.push_back(&plain[i]);
      blocked_in.push_back(&blocked[i]);
    }
    ir::Tensor want;
    QFUSE_ASSERT_OK(concat->Run(KernelContext{&pool, nullptr}, plain_in, absl::MakeSpan(&want, 1)));
    ASSERT_EQ(want.dims(), (std::vector<int64_t>{2, total, 3, 5}));
    if (!whole) continue;  // the executor hands such inputs over plain
    EXPECT_EQ(planned->kind, LayoutKind::kChannelBlocked);
    EXPECT_EQ(planned->channels, total);
    ir::Tensor got;
    QFUSE_ASSERT_OK(concat->Run(KernelContext{&pool, layouts.data()}, blocked_in, absl::MakeSpan(&got, 1)));
    EXPECT_TRUE(SameBytes(got, Blocked(pool, want)));
  }
}

// The Mul, Add and Relu kernels' arithmetic, one value at a time (tests build at -O1 for
// x86-64-v2: no fused multiply-add).
float Reference(float x, float s, float b, bool relu) {
  const float product = x * s;
  const float v = product + b;
  return relu ? (v > 0.f ? v : 0.f) : v;
}

TEST(ChannelAffineTest, EqualsSeparateRoundingsOnPlainAndBlockedInputs) {
  const ThreadPool pool(2);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {0.f, -0.f, nan, inf, -inf, 1e-40f, -1e-40f, 3.4e38f, 1.f / 3};
  for (int64_t channels : {1, 5, 16, 20, 37}) {
    for (int64_t width : {1, 7, 33}) {
      for (bool relu : {false, true}) {
        SCOPED_TRACE(::testing::Message() << channels << " channels, width " << width << (relu ? ", relu" : ""));
        GraphBuilder b;
        ir::Value* x = b.Input("x", {2, channels, 3, width});
        ir::Value* scale = b.Random("scale", {channels, 1, 1}, -2.f, 2.f);
        ir::Value* shift = b.Random("shift", {channels, 1, 1}, -2.f, 2.f);
        std::unique_ptr<Kernel> affine =
            MakeKernel(b, int8::kChannelAffineOp, {x, scale, shift},
                       GraphBuilder::Attrs({{int8::kChannelAffineReluAttr, int64_t{relu}}}), /*qfuse_domain=*/true);
        ir::Tensor in = RandomPlain({2, channels, 3, width}, static_cast<uint32_t>(channels * 100 + width));
        for (size_t i = 0; i < std::size(specials) && i < static_cast<size_t>(in.num_elements()); ++i) {
          in.mutable_values<float>()[i * 7 % in.num_elements()] = specials[i];
        }
        ir::Tensor want(ir::DataType::kFloat32, in.dims());
        const int64_t plane = 3 * width;
        for (int64_t i = 0; i < in.num_elements(); ++i) {
          const int64_t c = i / plane % channels;
          want.mutable_values<float>()[i] = Reference(in.values<float>()[i], scale->initializer()->values<float>()[c],
                                                      shift->initializer()->values<float>()[c], relu);
        }
        const ir::Tensor* plain_in[] = {&in, scale->initializer(), shift->initializer()};
        ir::Tensor got;
        QFUSE_ASSERT_OK(affine->Run(KernelContext{&pool, nullptr}, plain_in, absl::MakeSpan(&got, 1)));
        EXPECT_TRUE(SameBytes(got, want));
        if (!UseOneDnn()) continue;
        const TensorLayout layouts[] = {{LayoutKind::kChannelBlocked, channels}, {}, {}};
        ASSERT_TRUE(affine->layout_for_inputs(layouts).has_value());
        const ir::Tensor blocked = Blocked(pool, in);
        const ir::Tensor* blocked_in[] = {&blocked, scale->initializer(), shift->initializer()};
        QFUSE_ASSERT_OK(affine->Run(KernelContext{&pool, layouts}, blocked_in, absl::MakeSpan(&got, 1)));
        EXPECT_TRUE(SameBytes(got, Blocked(pool, want)));  // a partial last block's zeros included
      }
    }
  }
}

// A DenseNet layer's input: two convolutions, their Concat, the batch norm that cannot fold
// (as fusion's BatchNormToScaleShiftPass writes it) and its ReLU, run with the float chains
// fused (ChannelAffine, on the blocked layout where the channels fill blocks) and as written.
TEST(ChannelAffineTest, FusedGraphEqualsTheGraphAsWritten) {
  for (const auto& [ca, cb] : std::vector<std::pair<int64_t, int64_t>>{{16, 16}, {32, 16}, {8, 24}, {5, 7}}) {
    SCOPED_TRACE(::testing::Message() << ca << " + " << cb << " channels");
    const int64_t c = ca + cb;
    GraphBuilder b;
    ir::Value* x = b.Input("x", {-1, 3, 9, 11});
    const ir::AttributeMap same = GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* conv_a =
        b.Op("Conv", {x, b.Random("wa", {ca, 3, 3, 3}), b.Random("ba", {ca})}, "a", {-1, ca, 9, 11}, same);
    ir::Value* conv_b =
        b.Op("Conv", {x, b.Random("wb", {cb, 3, 3, 3}), b.Random("bb", {cb})}, "b", {-1, cb, 9, 11}, same);
    ir::Value* cat =
        b.Op("Concat", {conv_a, conv_b}, "cat", {-1, c, 9, 11}, GraphBuilder::Attrs({{"axis", int64_t{1}}}));
    ir::Value* mul = b.Op("Mul", {cat, b.Random("scale", {c, 1, 1}, 0.5f, 1.5f)}, "mul", {-1, c, 9, 11});
    ir::Value* add = b.Op("Add", {mul, b.Random("shift", {c, 1, 1})}, "add", {-1, c, 9, 11});
    b.Output(b.Op("Relu", {add}, "y", {-1, c, 9, 11}));
    b.Output(cat);
    std::vector<std::vector<NamedTensor>> results;
    for (bool fuse : {true, false}) {
      ExecutorOptions options;
      options.fuse_float_chains = fuse;
      QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
      int affines = 0;
      for (const ir::Node* n : exec->graph().nodes()) affines += n->op_type() == int8::kChannelAffineOp;
      EXPECT_EQ(affines, fuse ? 1 : 0);
      RandomInputOptions random;
      random.batch = 2;
      random.low = -1.f;
      QFUSE_ASSERT_OK_AND_ASSIGN(auto inputs, RandomInputs(b.graph(), random));
      QFUSE_ASSERT_OK_AND_ASSIGN(results.emplace_back(), exec->Run(inputs));
    }
    ASSERT_EQ(results[0].size(), 2u);
    for (size_t o = 0; o < 2; ++o) EXPECT_TRUE(SameBytes(results[0][o].tensor, results[1][o].tensor)) << o;
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn
