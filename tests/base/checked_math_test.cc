// Checked shape arithmetic and the checked Tensor constructors: hand-computed products,
// the int64 wrap of issue 13's probe, negative dims, the 1 TiB cap, SetDims' count check.
#include "base/checked_math.h"

#include <limits>

#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::base {
namespace {

// Tensor::Create and SetDims are where the IR uses these checks.
using ir::DataType;
using ir::Tensor;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(CheckedMathTest, ProductsAndSums) {
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t p, CheckedMul(3037000499, 3037000499, "p"));  // floor(sqrt(2^63 - 1))
  EXPECT_EQ(p, int64_t{9223372030926249001});
  EXPECT_FALSE(CheckedMul(3037000500, 3037000500, "p").ok());
  EXPECT_FALSE(CheckedMul(-kMax - 1, -1, "p").ok());
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t s, CheckedAdd(kMax - 5, 5, "s"));
  EXPECT_EQ(s, kMax);
  absl::StatusOr<int64_t> wrapped = CheckedAdd(kMax, 1, "Pad end");
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.status().message(), "Pad end: 9223372036854775807 + 1 overflows int64");
}

TEST(CheckedMathTest, ElementAndByteCounts) {
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t n, CheckedElementCount({2, 3, 4}, "x"));
  EXPECT_EQ(n, 24);
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t scalar, CheckedElementCount({}, "x"));
  EXPECT_EQ(scalar, 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t empty, CheckedElementCount({0, int64_t{1} << 40, 8}, "x"));
  EXPECT_EQ(empty, 0);
  // Empty, but 2^62 * 8 would overflow a kernel's stride: refused (found by the model fuzzer).
  EXPECT_FALSE(CheckedElementCount({0, int64_t{1} << 62, 8}, "x").ok());
  // 4 * (2^62 + 196) == 784 modulo 2^64: the probe's shape.
  absl::StatusOr<int64_t> wrapped = CheckedElementCount({(int64_t{1} << 62) + 196, 4}, "Reshape");
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.status().message(), "Reshape shape [4611686018427388100,4] overflows int64");
  absl::StatusOr<int64_t> negative = CheckedElementCount({2, -1}, "input 'x'");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "input 'x' shape [2,-1] has a negative dim");
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t bytes, CheckedByteCount({3, 5}, 4, "x"));
  EXPECT_EQ(bytes, 60);
  QFUSE_ASSERT_OK_AND_ASSIGN(int64_t limit, CheckedByteCount({int64_t{1} << 38}, 4, "x"));
  EXPECT_EQ(limit, kMaxTensorBytes);
  EXPECT_EQ(CheckedByteCount({(int64_t{1} << 38) + 1}, 4, "x").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CheckedByteCount({int64_t{1} << 61}, 8, "x").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CheckedMathTest, TensorCreateChecksBeforeAllocating) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Create(DataType::kInt16, {2, 3}));
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.byte_size(), 12u);
  for (int16_t v : t.values<int16_t>()) EXPECT_EQ(v, 0);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor u, Tensor::CreateUninitialized(DataType::kFloat32, {0, 7}));
  EXPECT_EQ(u.num_elements(), 0);
  absl::StatusOr<Tensor> wrapped = Tensor::Create(DataType::kFloat32, {(int64_t{1} << 62) + 196, 4}, "Gather output");
  ASSERT_FALSE(wrapped.ok());
  EXPECT_EQ(wrapped.status().message(), "Gather output shape [4611686018427388100,4] overflows int64");
  EXPECT_EQ(Tensor::Create(DataType::kFloat32, {int64_t{1} << 20, int64_t{1} << 20}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(Tensor::CreateUninitialized(DataType::kUint8, {-3}).ok());
}

TEST(CheckedMathTest, SetDimsKeepsTheElementCount) {
  Tensor t = Tensor::FromVector<float>({2, 6}, std::vector<float>(12, 1.f));
  QFUSE_ASSERT_OK(t.SetDims({3, 4}));
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 4}));
  absl::Status more = t.SetDims({4, 4});
  EXPECT_EQ(more.message(), "shape [4,4] has 16 elements, the tensor 12");
  EXPECT_FALSE(t.SetDims({(int64_t{1} << 62) + 3, 4}).ok());  // wraps to 12
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 4}));
}

}  // namespace
}  // namespace qfuse::base
