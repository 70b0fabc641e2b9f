// Which path a float Conv plan chooses (depthwise, implicit GEMM, im2col + GEMM) for each
// shape and ISA cap, that a plan holds for any batch but not for another shape or cap, and
// the shape errors it reports. conv_test.cc checks every path against the reference.
#include "runtime/kernels/linalg/conv_plan.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::kernels::linalg {
namespace {

using Dims = std::vector<int64_t>;

ConvAttrs Attrs(int64_t group, Dims strides = {}, Dims pads = {}) {
  ConvAttrs a;
  a.group = group;
  a.strides = std::move(strides);
  a.pads = std::move(pads);
  return a;
}

ConvPath PathOf(const ConvAttrs& attrs, const Dims& x, const Dims& w) {
  absl::StatusOr<ConvPlan> plan = PlanConv(attrs, x, w);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? plan->path : ConvPath::kIm2ColGemm;
}

TEST(ConvPlanTest, EachShapeGetsItsPath) {
  testing::IsaCapGuard guard;
  const bool avx512 = MaxIsa() >= Isa::kAvx512;
  const ConvPath dense_unit_stride = avx512 ? ConvPath::kImplicitGemm : ConvPath::kIm2ColGemm;
  // One input channel per group: depthwise, with or without a channel multiplier.
  EXPECT_EQ(PathOf(Attrs(6, {}, {1, 1, 1, 1}), {1, 6, 9, 8}, {6, 1, 3, 3}), ConvPath::kDepthwise);
  EXPECT_EQ(PathOf(Attrs(3, {2, 2}), {1, 3, 9, 8}, {6, 1, 3, 3}), ConvPath::kDepthwise);
  // Dense unit-stride 1-D and 2-D convs: the implicit GEMM on AVX-512.
  EXPECT_EQ(PathOf(Attrs(1, {}, {1, 1, 1, 1}), {1, 5, 9, 8}, {7, 5, 3, 3}), dense_unit_stride);
  EXPECT_EQ(PathOf(Attrs(2), {1, 4, 10}, {6, 2, 3}), dense_unit_stride);
  // Strided, pointwise or 3-D kernels: im2col + GEMM.
  EXPECT_EQ(PathOf(Attrs(1, {2, 1}), {1, 5, 9, 8}, {7, 5, 3, 3}), ConvPath::kIm2ColGemm);
  EXPECT_EQ(PathOf(Attrs(1), {1, 8, 9, 8}, {6, 8, 1, 1}), ConvPath::kIm2ColGemm);
  EXPECT_EQ(PathOf(Attrs(1), {1, 4, 5, 6, 7}, {6, 4, 3, 2, 3}), ConvPath::kIm2ColGemm);
  // Below AVX-512 every dense conv takes im2col + GEMM.
  SetIsaCap(Isa::kAvx2);
  EXPECT_EQ(PathOf(Attrs(1, {}, {1, 1, 1, 1}), {1, 5, 9, 8}, {7, 5, 3, 3}), ConvPath::kIm2ColGemm);
  EXPECT_EQ(PathOf(Attrs(6), {1, 6, 9, 8}, {6, 1, 3, 3}), ConvPath::kDepthwise);
}

TEST(ConvPlanTest, HoldsForAnyBatchOnlyUnderItsShapesAndCap) {
  testing::IsaCapGuard guard;
  QFUSE_ASSERT_OK_AND_ASSIGN(ConvPlan plan, PlanConv(Attrs(1), {1, 5, 9, 8}, {7, 5, 3, 3}));
  EXPECT_EQ(plan.geometry.col[1], 7);
  EXPECT_EQ(plan.geometry.col[2], 6);
  EXPECT_TRUE(plan.Fits({64, 5, 9, 8}, {7, 5, 3, 3}));
  EXPECT_FALSE(plan.Fits({1, 5, 9, 9}, {7, 5, 3, 3}));
  EXPECT_FALSE(plan.Fits({1, 5, 9, 8}, {7, 5, 1, 1}));
  SetIsaCap(plan.isa == Isa::kScalar ? Isa::kAvx2 : Isa::kScalar);
  EXPECT_EQ(plan.Fits({1, 5, 9, 8}, {7, 5, 3, 3}), MaxIsa() == plan.isa);
}

TEST(ConvPlanTest, ShapeErrors) {
  EXPECT_FALSE(PlanConv(Attrs(1), {1, 3, 5}, {2, 3, 3, 3}).ok());      // rank mismatch
  EXPECT_FALSE(PlanConv(Attrs(1), {1, 3, 5, 5}, {2, 2, 3, 3}).ok());   // channel mismatch
  EXPECT_FALSE(PlanConv(Attrs(2), {1, 4, 5, 5}, {3, 2, 3, 3}).ok());   // 3 outputs in 2 groups
  EXPECT_FALSE(PlanConv(Attrs(1), {1, 3, 5, 5}, {2, 3, 7, 7}).ok());   // kernel larger than the input
  EXPECT_FALSE(PlanConv(Attrs(1), {1, 3}, {2, 3}).ok());               // no spatial dims
}

}  // namespace
}  // namespace qfuse::runtime::kernels::linalg
