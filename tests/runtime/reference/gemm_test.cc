// The reference GEMM, MatMul and integer GEMM on hand-computed cases: the oracle checked
// against arithmetic done by hand before it checks the optimised kernels.
#include "runtime/reference/gemm.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::reference {
namespace {

using ir::Tensor;

std::vector<float> Values(const Tensor& t) { return {t.values<float>().begin(), t.values<float>().end()}; }

TEST(ReferenceGemmTest, StridesTransposesAlphaBeta) {
  // op(A) = [[1,2],[3,4]] stored transposed with lda 3; B = [[5,6],[7,8]] with ldb 3; C rows of 3.
  const std::vector<float> a = {1, 3, -1, 2, 4, -1};
  const std::vector<float> b = {5, 6, -1, 7, 8, -1};
  const std::vector<float> c = {1, 2, -1, 3, 4, -1};
  std::vector<double> out(6, -7);
  Gemm({true, false, 2, 2, 2, 3, 3, 3, 2.0, 0.5}, a.data(), b.data(), c.data(), out.data());
  EXPECT_EQ(out, (std::vector<double>{38.5, 45, -7, 87.5, 102, -7}));  // 2 * [[19,22],[43,50]] + C / 2
  const std::vector<float> nan_c(6, std::nanf(""));
  Gemm({true, false, 2, 2, 2, 3, 3, 3, 1.0, 0.0}, a.data(), b.data(), nan_c.data(), out.data());
  EXPECT_EQ(out, (std::vector<double>{19, 22, -7, 43, 50, -7}));  // beta 0 never reads C
}

TEST(ReferenceGemmTest, OnnxGemmBroadcastsC) {
  const Tensor a = Tensor::FromVector<float>({2, 2}, std::vector<float>{1, 3, 2, 4});
  const Tensor b = Tensor::FromVector<float>({2, 2}, std::vector<float>{5, 7, 6, 8});
  const Tensor c = Tensor::FromVector<float>({2}, std::vector<float>{1, 2});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, GemmOp(a, b, &c, {true, true, 2.0f, 0.5f}));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values(y), (std::vector<float>{38.5f, 45, 86.5f, 101}));
  const Tensor column = Tensor::FromVector<float>({2, 1}, std::vector<float>{10, 20});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor yc, GemmOp(a, b, &column, {true, true, 1.0f, 1.0f}));
  EXPECT_EQ(Values(yc), (std::vector<float>{29, 32, 63, 70}));
  EXPECT_FALSE(GemmOp(a, Tensor::FromVector<float>({3, 1}, std::vector<float>{1, 2, 3}), nullptr, {}).ok());
}

TEST(ReferenceGemmTest, MatMulBroadcastsBatchDims) {
  // a [2, 1, 1, 2] x b [3, 2, 1]: batch [2, 3], each a row times a column.
  const Tensor a = Tensor::FromVector<float>({2, 1, 1, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor b = Tensor::FromVector<float>({3, 2, 1}, std::vector<float>{1, 0, 0, 1, 1, 1});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, MatMul(a, b));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 1, 1}));
  EXPECT_EQ(Values(y), (std::vector<float>{1, 2, 3, 3, 4, 7}));
  EXPECT_FALSE(MatMul(a, Tensor::FromVector<float>({2, 3, 1}, std::vector<float>(6))).ok());
}

TEST(ReferenceGemmTest, IntegerGemmZeroPointsPerRowAndColumn) {
  // A = [[130, 0], [1, 255]] - [128, 1] per row; B = [[-128, 5], [127, -3]] - [0, -3] per column.
  const std::vector<uint8_t> a = {130, 0, 1, 255};
  const std::vector<int8_t> b = {-128, 5, 127, -3};
  std::vector<int64_t> out(4);
  IntegerGemm({2, 2, 2, 2, 2, 2}, a.data(), {128, 1}, b.data(), {0, -3}, out.data());
  // [[2, -128], [0, 254]] x [[-128, 8], [127, 0]]
  EXPECT_EQ(out, (std::vector<int64_t>{-256 - 16256, 16, 32258, 0}));
}

}  // namespace
}  // namespace qfuse::runtime::reference
