// Cast: rounding at ties, saturation/NaN handling and BOOL.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

ir::AttributeMap To(DataType t) {
  ir::AttributeMap a;
  a.Set("to", static_cast<int64_t>(ir::DataTypeToOnnx(t)));
  return a;
}

TEST(CastTest, FloatToFloat16RoundsHalfToEven) {
  const float kHalfUlp = std::ldexp(1.f, -11);  // half of float16's ulp at 1.0
  Tensor x = T1<float>({6}, {1 + kHalfUlp, 1 + 3 * kHalfUlp, 65519.f, 65520.f, std::ldexp(1.f, -25),
                             3 * std::ldexp(1.f, -25)});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(x)}, To(DataType::kFloat16)));
  ASSERT_EQ(y[0].dtype(), DataType::kFloat16);
  // 1+2^-11 ties to 1.0 (even); 1+3*2^-11 ties up to 1+2^-9; 65519 -> 65504 (max);
  // 65520 -> inf; 2^-25 ties to 0; 3*2^-25 ties to 2 * 2^-24.
  EXPECT_EQ(Values<uint16_t>(y[0]), (std::vector<uint16_t>{0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000, 0x0002}));
}

TEST(CastTest, DoubleToFloat16RoundsOnce) {
  // Just above the tie: rounding through float first would land on the tie and go
  // to even (0x3c00); a single rounding goes up.
  Tensor x = T1<double>({1}, {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(x)}, To(DataType::kFloat16)));
  EXPECT_EQ(Values<uint16_t>(y[0]), (std::vector<uint16_t>{0x3c01}));
}

TEST(CastTest, Float16AndBFloat16WidenExactly) {
  Tensor h(DataType::kFloat16, {3});
  const uint16_t hv[] = {0x3555, 0x0001, 0xfc00};  // 0.333251953125, 2^-24, -inf
  std::memcpy(h.raw_data(), hv, sizeof(hv));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(h)}, To(DataType::kFloat64)));
  EXPECT_EQ(Values<double>(y[0]), (std::vector<double>{0.333251953125, std::ldexp(1.0, -24),
                                                       -std::numeric_limits<double>::infinity()}));
  Tensor b(DataType::kBFloat16, {1});
  const uint16_t bv = 0x3fc0;  // 1.5
  std::memcpy(b.raw_data(), &bv, sizeof(bv));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto z, RunOneNode("Cast", {In(b)}, To(DataType::kFloat32)));
  EXPECT_EQ(Values<float>(z[0]), (std::vector<float>{1.5f}));
}

TEST(CastTest, FloatToBFloat16TruncatesLikeOnnxReference) {
  // 1 + 2^-7 + 2^-8 would round up to 1 + 2^-6; ONNX 1.12's reference drops the bits.
  Tensor x = T1<float>({1}, {1 + std::ldexp(1.f, -7) + std::ldexp(1.f, -8)});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(x)}, To(DataType::kBFloat16)));
  EXPECT_EQ(Values<uint16_t>(y[0]), (std::vector<uint16_t>{0x3f81}));
}

TEST(CastTest, FloatToIntTruncatesAndNeverTraps) {
  Tensor x = T1<float>({5}, {-2.7f, 2.7f, std::nanf(""), 1e20f, -0.5f});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(x)}, To(DataType::kInt32)));
  EXPECT_EQ(Values<int32_t>(y[0]), (std::vector<int32_t>{-2, 2, 0, 0, 0}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto b, RunOneNode("Cast", {In(x)}, To(DataType::kBool)));
  EXPECT_EQ(Values<bool>(b[0]), (std::vector<bool>{true, true, true, true, true}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto u, RunOneNode("Cast", {In(T1<int32_t>({2}, {-1, 300}))}, To(DataType::kUint8)));
  EXPECT_EQ(Values<uint8_t>(u[0]), (std::vector<uint8_t>{255, 44}));  // modular, like numpy
}

TEST(CastTest, Int64Precision) {
  const int64_t big = (int64_t{1} << 53) + 1;  // not representable in double
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Cast", {In(T1<int64_t>({1}, {big}))}, To(DataType::kUint64)));
  EXPECT_EQ(Values<uint64_t>(y[0]), (std::vector<uint64_t>{static_cast<uint64_t>(big)}));
}

TEST(CastTest, StringTargetIsRefusedAtCreation) {
  ir::AttributeMap a;
  a.Set("to", int64_t{8});  // STRING
  auto r = RunOneNode("Cast", {In(T1<float>({1}, {1}))}, a);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace qfuse::testing
