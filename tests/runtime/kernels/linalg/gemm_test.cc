// Gemm and MatMul kernels: hand-computed cases and the reference kernels (runtime/reference).
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference/gemm.h"
#include "tests/runtime/kernels/linalg/linalg_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::testing {
namespace {

TEST(GemmTest, TransposedOperandsAlphaBetaVectorBias) {
  // op(A) = [[1,2],[3,4]] stored transposed, op(B) = [[5,6],[7,8]] stored transposed.
  Tensor a = Floats({2, 2}, {1, 3, 2, 4});
  Tensor b = Floats({2, 2}, {5, 7, 6, 8});
  Tensor c = Floats({2}, {1, 2});
  ir::AttributeMap attrs;
  attrs.Set("transA", int64_t{1});
  attrs.Set("transB", int64_t{1});
  attrs.Set("alpha", 2.0f);
  attrs.Set("beta", 0.5f);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Gemm", {In("a", a), In("b", b), In("c", c)}, attrs));
  ExpectNear(y, Floats({2, 2}, {38.5f, 45, 86.5f, 101}));
}

TEST(GemmTest, LargeAllTransposeCombinationsWithColumnBias) {
  const int64_t m = 130, n = 97, k = 81;
  Tensor c = Random({m, 1}, 5);
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(::testing::Message() << "transA=" << ta << " transB=" << tb);
      Tensor a = Random(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, 10 + ta);
      Tensor b = Random(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, 20 + tb);
      ir::AttributeMap attrs;
      attrs.Set("transA", int64_t{ta});
      attrs.Set("transB", int64_t{tb});
      attrs.Set("alpha", 0.5f);
      QFUSE_ASSERT_OK_AND_ASSIGN(Tensor expected, reference::GemmOp(a, b, &c, {ta == 1, tb == 1, 0.5f, 1.0f}));
      QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Gemm", {In("a", a), Const("b", b), Const("c", c)}, attrs));
      ExpectNear(y, expected);
      QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y_in, RunNode("Gemm", {In("a", a), In("b", b), In("c", c)}, attrs));
      ExpectNear(y_in, expected);
    }
  }
}

TEST(GemmTest, SeveralCacheBlocksBetaZeroIgnoresC) {
  // More rows, columns and depth than one cache block of the packed GEMM holds.
  const int64_t m = 150, n = 600, k = 300;
  Tensor a = Random({m, k}, 30);
  Tensor b = Random({k, n}, 31);
  Tensor c(DataType::kFloat32, {m, n});
  for (float& v : c.mutable_values<float>()) v = std::numeric_limits<float>::quiet_NaN();
  ir::AttributeMap attrs;
  attrs.Set("beta", 0.0f);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Gemm", {In("a", a), In("b", b), In("c", c)}, attrs));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor expected, reference::GemmOp(a, b, &c, {false, false, 1.0f, 0.0f}));
  ExpectNear(y, expected);
}

TEST(GemmTest, NoBiasAndBadShapes) {
  Tensor a = Floats({1, 3}, {1, 2, 3});
  Tensor b = Floats({3, 1}, {4, 5, 6});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Gemm", {In("a", a), In("b", b)}));
  ExpectNear(y, Floats({1, 1}, {32}));
  EXPECT_FALSE(RunNode("Gemm", {In("a", a), In("b", Random({2, 1}, 1))}).ok());
  EXPECT_FALSE(RunNode("Gemm", {In("a", a), In("b", b), In("c", Random({2}, 1))}).ok());
}

// `y` equals the reference MatMul of a and b.
void ExpectMatMul(const Tensor& y, const Tensor& a, const Tensor& b) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor expected, reference::MatMul(a, b));
  ExpectNear(y, expected);
}

TEST(MatMulTest, BatchedBroadcast) {
  Tensor a = Random({2, 1, 3, 4}, 1);
  Tensor b = Random({3, 4, 5}, 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("MatMul", {In("a", a), In("b", b)}));
  ExpectMatMul(y, a, b);
  // Larger, so the batch loop runs on the pool.
  Tensor a2 = Random({6, 40, 33}, 3);
  Tensor b2 = Random({1, 33, 50}, 4);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y2, RunNode("MatMul", {In("a", a2), In("b", b2)}));
  ExpectMatMul(y2, a2, b2);
  Tensor b3 = Random({6, 33, 50}, 5);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y3, RunNode("MatMul", {In("a", a2), Const("b", b3)}));
  ExpectMatMul(y3, a2, b3);
}

TEST(MatMulTest, SharedRightOperandFoldsBatch) {
  Tensor a = Random({4, 70, 64}, 6);
  Tensor b = Random({64, 96}, 7);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("MatMul", {In("a", a), Const("b", b)}));
  ExpectMatMul(y, a, b);
}

TEST(MatMulTest, OneDimensionalOperands) {
  Tensor v = Floats({3}, {1, 2, 3});
  Tensor m = Floats({2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor vm, RunNode("MatMul", {In("a", v), In("b", m)}));
  ExpectNear(vm, Floats({2, 2}, {4, 5, 5, 1}));
  Tensor mt = Floats({2, 2, 3}, {1, 0, 1, 0, 1, 1, 2, 0, 1, 0, 2, -1});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor mv, RunNode("MatMul", {In("a", mt), In("b", v)}));
  ExpectNear(mv, Floats({2, 2}, {4, 5, 5, 1}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor dot, RunNode("MatMul", {In("a", v), In("b", v)}));
  ExpectNear(dot, Floats({}, {14}));
  EXPECT_FALSE(RunNode("MatMul", {In("a", v), In("b", Random({2, 2}, 1))}).ok());
}

TEST(MatMulTest, Double) {
  Tensor a = Tensor::FromVector<double>({2, 2}, std::vector<double>{1, 2, 3, 4});
  Tensor b = Tensor::FromVector<double>({2, 1}, std::vector<double>{0.5, 0.25});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("MatMul", {In("a", a), In("b", b)}));
  ExpectNear<double>(y, Tensor::FromVector<double>({2, 1}, std::vector<double>{1, 2.5}));
}

}  // namespace
}  // namespace qfuse::runtime::testing
