// Gemm and MatMul kernels: hand-computed cases and naive references.
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
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

Tensor ReferenceGemm(const Tensor& a, const Tensor& b, bool ta, bool tb, float alpha) {
  const int64_t m = ta ? a.dims()[1] : a.dims()[0], k = ta ? a.dims()[0] : a.dims()[1];
  const int64_t n = tb ? b.dims()[0] : b.dims()[1];
  Tensor y(DataType::kFloat32, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float av = ta ? a.data<float>()[p * m + i] : a.data<float>()[i * k + p];
        const float bv = tb ? b.data<float>()[j * k + p] : b.data<float>()[p * n + j];
        acc += double(av) * bv;
      }
      y.data<float>()[i * n + j] = static_cast<float>(alpha * acc);
    }
  return y;
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
      Tensor expected = ReferenceGemm(a, b, ta, tb, 0.5f);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) expected.data<float>()[i * n + j] += c.data<float>()[i];
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
  ExpectNear(y, ReferenceGemm(a, b, false, false, 1.0f));
}

TEST(GemmTest, NoBiasAndBadShapes) {
  Tensor a = Floats({1, 3}, {1, 2, 3});
  Tensor b = Floats({3, 1}, {4, 5, 6});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Gemm", {In("a", a), In("b", b)}));
  ExpectNear(y, Floats({1, 1}, {32}));
  EXPECT_FALSE(RunNode("Gemm", {In("a", a), In("b", Random({2, 1}, 1))}).ok());
  EXPECT_FALSE(RunNode("Gemm", {In("a", a), In("b", b), In("c", Random({2}, 1))}).ok());
}

// Naive numpy-style matmul for rank >= 2 operands with broadcast batch dims.
Tensor ReferenceBatchedMatMul(const Tensor& a, const Tensor& b, std::vector<int64_t> batch) {
  const int64_t m = a.dims()[a.rank() - 2], k = a.dims().back(), n = b.dims().back();
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor y(DataType::kFloat32, out_dims);
  const int64_t count = ir::NumElements(batch);
  for (int64_t idx = 0; idx < count; ++idx) {
    // Right-aligned batch index into each operand, 0 on broadcast dims.
    int64_t rem = idx, a_off = 0, b_off = 0, a_mul = 1, b_mul = 1;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      const int64_t ad = d - (static_cast<int64_t>(batch.size()) - (a.rank() - 2));
      const int64_t bd = d - (static_cast<int64_t>(batch.size()) - (b.rank() - 2));
      if (ad >= 0) {
        a_off += (a.dims()[ad] == 1 ? 0 : i) * a_mul;
        a_mul *= a.dims()[ad];
      }
      if (bd >= 0) {
        b_off += (b.dims()[bd] == 1 ? 0 : i) * b_mul;
        b_mul *= b.dims()[bd];
      }
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc += double(a.data<float>()[a_off * m * k + i * k + p]) * b.data<float>()[b_off * k * n + p * n + j];
        }
        y.data<float>()[idx * m * n + i * n + j] = static_cast<float>(acc);
      }
  }
  return y;
}

TEST(MatMulTest, BatchedBroadcast) {
  Tensor a = Random({2, 1, 3, 4}, 1);
  Tensor b = Random({3, 4, 5}, 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("MatMul", {In("a", a), In("b", b)}));
  ExpectNear(y, ReferenceBatchedMatMul(a, b, {2, 3}));
  // Larger, so the batch loop runs on the pool.
  Tensor a2 = Random({6, 40, 33}, 3);
  Tensor b2 = Random({1, 33, 50}, 4);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y2, RunNode("MatMul", {In("a", a2), In("b", b2)}));
  ExpectNear(y2, ReferenceBatchedMatMul(a2, b2, {6}));
  Tensor b3 = Random({6, 33, 50}, 5);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y3, RunNode("MatMul", {In("a", a2), Const("b", b3)}));
  ExpectNear(y3, ReferenceBatchedMatMul(a2, b3, {6}));
}

TEST(MatMulTest, SharedRightOperandFoldsBatch) {
  Tensor a = Random({4, 70, 64}, 6);
  Tensor b = Random({64, 96}, 7);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("MatMul", {In("a", a), Const("b", b)}));
  ExpectNear(y, ReferenceBatchedMatMul(a, b, {4}));
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
