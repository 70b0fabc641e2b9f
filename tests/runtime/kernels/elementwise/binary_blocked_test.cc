// The float Mul kernel on two channel-blocked inputs (a squeeze-excitation gate times a
// convolution's output, both in the layout [N, ceil(C/B), H, W, B] of onednn_engine.h): it takes
// them as they are only for Mul of equal channel counts, and its blocked output, unblocked,
// has the plain Mul's bits, with the padding channels zero.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/thread_pool.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::kernels {
namespace {

constexpr int64_t kBlock = 16;

// Plain [N, C, H, W] values to the blocked layout, padding channels zero.
ir::Tensor Blocked(const std::vector<float>& plain, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t cb = (c + kBlock - 1) / kBlock;
  ir::Tensor t = ir::Tensor::Create(ir::DataType::kFloat32, {n, cb, h, w, kBlock}).value();  // zeros
  float* out = t.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < h * w; ++p) {
        out[(((i * cb + ch / kBlock) * h * w) + p) * kBlock + ch % kBlock] = plain[(i * c + ch) * h * w + p];
      }
    }
  }
  return t;
}

std::unique_ptr<Kernel> MakeKernel(const std::string& op) {
  ir::Graph g;
  ir::TensorType f32;
  f32.dtype = ir::DataType::kFloat32;
  ir::Value* a = *g.AddInput("a", f32);
  ir::Value* b = *g.AddInput("b", f32);
  ir::Node* node = *g.AddNode(op, "node", {a, b}, {"y"}, {});
  return CreateBinaryKernel(*node).value();
}

TEST(BinaryBlockedTest, OnlyMulOfEqualChannelsKeepsTheBlocks) {
  const TensorLayout blocked20{LayoutKind::kChannelBlocked, 20}, blocked24{LayoutKind::kChannelBlocked, 24};
  const TensorLayout plain{};
  std::unique_ptr<Kernel> mul = MakeKernel("Mul");
  ASSERT_TRUE(mul->layout_for_inputs({blocked20, blocked20}).has_value());
  EXPECT_EQ(mul->layout_for_inputs({blocked20, blocked20})->channels, 20);
  EXPECT_FALSE(mul->layout_for_inputs({blocked20, blocked24}).has_value());
  EXPECT_FALSE(mul->layout_for_inputs({blocked20, plain}).has_value());
  // 0 / 0 in the padding would be NaN, and an Add could make it non-zero: those stay plain.
  for (const char* op : {"Add", "Sub", "Div", "Pow", "PRelu"}) {
    EXPECT_FALSE(MakeKernel(op)->layout_for_inputs({blocked20, blocked20}).has_value()) << op;
  }
}

TEST(BinaryBlockedTest, GateTimesActivationHasThePlainBits) {
  const int64_t n = 2, c = 20, h = 3, w = 5;
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.f, 3.f);
  std::vector<float> x(n * c * h * w), gate(n * c);
  for (float& v : x) v = d(rng);
  for (float& v : gate) v = d(rng);
  const ir::Tensor xb = Blocked(x, n, c, h, w), gb = Blocked(gate, n, c, 1, 1);
  std::unique_ptr<Kernel> mul = MakeKernel("Mul");
  const std::vector<TensorLayout> layouts(2, TensorLayout{LayoutKind::kChannelBlocked, c});
  ThreadPool pool(2);
  KernelContext ctx{&pool, layouts.data()};
  std::vector<const ir::Tensor*> inputs = {&xb, &gb};
  std::vector<ir::Tensor> out(1);
  QFUSE_ASSERT_OK(mul->Run(ctx, inputs, absl::MakeSpan(out)));
  ASSERT_EQ(out[0].dims(), xb.dims());
  std::vector<float> want(x.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < h * w; ++p)
        want[(i * c + ch) * h * w + p] = x[(i * c + ch) * h * w + p] * gate[i * c + ch];
    }
  }
  const ir::Tensor want_blocked = Blocked(want, n, c, h, w);
  EXPECT_TRUE(out[0].BitwiseEqual(want_blocked)) << "the blocked product differs from the plain one (or its padding)";
}

}  // namespace
}  // namespace qfuse::runtime::kernels
