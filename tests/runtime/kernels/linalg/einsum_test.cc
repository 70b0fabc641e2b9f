// Einsum kernel against naive loops written out per equation and the reference MatMul.
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/reference/gemm.h"
#include "tests/runtime/kernels/linalg/linalg_test_util.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::testing {
namespace {

ir::AttributeMap Equation(const std::string& eq) {
  ir::AttributeMap a;
  a.Set("equation", eq);
  return a;
}

TEST(EinsumTest, OuterProductBldDnToBldn) {
  const int64_t b = 2, l = 3, d = 4, n = 5;
  Tensor x = Random({b, l, d}, 1);
  Tensor w = Random({d, n}, 2);
  Tensor expected(DataType::kFloat32, {b, l, d, n});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < l; ++j)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t q = 0; q < n; ++q)
          expected.data<float>()[((i * l + j) * d + p) * n + q] =
              x.data<float>()[(i * l + j) * d + p] * w.data<float>()[p * n + q];
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Einsum", {In("x", x), In("w", w)}, Equation("bld,dn->bldn")));
  ExpectNear(y, expected);
}

TEST(EinsumTest, BatchedMatVecBdnBnToBd) {
  const int64_t b = 3, d = 4, n = 6;
  Tensor x = Random({b, d, n}, 3);
  Tensor v = Random({b, n}, 4);
  // The reference MatMul of [b, d, n] and v as [b, n, 1], read as [b, d].
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor product,
                             reference::MatMul(x, Tensor::FromVector<float>({b, n, 1}, v.values<float>())));
  const Tensor expected = Tensor::FromVector<float>({b, d}, product.values<float>());
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Einsum", {In("x", x), In("v", v)}, Equation("bdn,bn->bd")));
  ExpectNear(y, expected);
}

TEST(EinsumTest, ThreeOperandsBldBlnBldToBldn) {
  const int64_t b = 2, l = 3, d = 4, n = 5;
  Tensor x = Random({b, l, d}, 5);
  Tensor y_in = Random({b, l, n}, 6);
  Tensor z = Random({b, l, d}, 7);
  Tensor expected(DataType::kFloat32, {b, l, d, n});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < l; ++j)
      for (int64_t p = 0; p < d; ++p)
        for (int64_t q = 0; q < n; ++q)
          expected.data<float>()[((i * l + j) * d + p) * n + q] = x.data<float>()[(i * l + j) * d + p] *
                                                                   y_in.data<float>()[(i * l + j) * n + q] *
                                                                   z.data<float>()[(i * l + j) * d + p];
  QFUSE_ASSERT_OK_AND_ASSIGN(
      Tensor y, RunNode("Einsum", {In("x", x), In("u", y_in), In("z", z)}, Equation("bld,bln,bld->bldn")));
  ExpectNear(y, expected);
}

TEST(EinsumTest, TraceDiagonalAndImplicitOutput) {
  Tensor m = Floats({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor trace, RunNode("Einsum", {In("m", m)}, Equation("ii")));
  ExpectNear(trace, Floats({}, {15}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor diag, RunNode("Einsum", {In("m", m)}, Equation("ii->i")));
  ExpectNear(diag, Floats({3}, {1, 5, 9}));
  // Implicit output sorts the free labels: "ba" -> "ab" is a transpose.
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor t, RunNode("Einsum", {In("m", m)}, Equation("ba")));
  ExpectNear(t, Floats({3, 3}, {1, 4, 7, 2, 5, 8, 3, 6, 9}));
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor sum, RunNode("Einsum", {In("m", m)}, Equation("ij->")));
  ExpectNear(sum, Floats({}, {45}));
}

TEST(EinsumTest, EllipsisBroadcastBatchMatMul) {
  Tensor a = Random({2, 1, 3, 4}, 8);
  Tensor b = Random({5, 4, 2}, 9);
  QFUSE_ASSERT_OK_AND_ASSIGN(const Tensor expected, reference::MatMul(a, b));  // [2, 5, 3, 2]
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Einsum", {In("a", a), In("b", b)}, Equation("...ij,...jk->...ik")));
  ExpectNear(y, expected);
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor yi, RunNode("Einsum", {In("a", a), In("b", b)}, Equation("...ij,...jk")));
  ExpectNear(yi, expected);
}

TEST(EinsumTest, BatchDiagonalDouble) {
  Tensor x = Tensor::FromVector<double>({2, 2, 2}, std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8});
  QFUSE_ASSERT_OK_AND_ASSIGN(Tensor y, RunNode("Einsum", {In("x", x)}, Equation("...ii->...i")));
  ExpectNear<double>(y, Tensor::FromVector<double>({2, 2}, std::vector<double>{1, 4, 5, 8}));
}

TEST(EinsumTest, BadEquationsAreErrors) {
  Tensor m = Random({2, 3}, 1);
  EXPECT_FALSE(RunNode("Einsum", {In("m", m)}, Equation("ijk->i")).ok());       // rank mismatch
  EXPECT_FALSE(RunNode("Einsum", {In("m", m)}, Equation("ii->i")).ok());        // diagonal of 2x3
  EXPECT_FALSE(RunNode("Einsum", {In("m", m)}, Equation("ij->ik")).ok());       // unknown output label
  EXPECT_FALSE(RunNode("Einsum", {In("m", m)}, Equation("ij,jk->ik")).ok());    // operand count
  EXPECT_FALSE(RunNode("Einsum", {In("m", m), In("n", Random({4, 2}, 2))}, Equation("ij,jk->ik")).ok());
}

}  // namespace
}  // namespace qfuse::runtime::testing
