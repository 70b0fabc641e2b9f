// Transpose, Concat, Split, Slice and Gather: non-float dtypes, the tiled transpose
// path, empty tensors, clamping corners and error statuses.
#include "gtest/gtest.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::DataType;
using ir::Tensor;

ir::AttributeMap Ints(const std::string& name, std::vector<int64_t> v) {
  ir::AttributeMap a;
  a.Set(name, std::move(v));
  return a;
}
ir::AttributeMap Int(const std::string& name, int64_t v) {
  ir::AttributeMap a;
  a.Set(name, v);
  return a;
}

TEST(TransposeTest, NchwToNhwcInt8) {
  // x[0,c,h,w] = 10c + 2h + w over C=2, H=2, W=2.
  Tensor x = T1<int8_t>({1, 2, 2, 2}, {0, 1, 2, 3, 10, 11, 12, 13});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Transpose", {In(x)}, Ints("perm", {0, 2, 3, 1})));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 2, 2, 2}));
  EXPECT_EQ(Values<int8_t>(y[0]), (std::vector<int8_t>{0, 10, 1, 11, 2, 12, 3, 13}));
}

TEST(TransposeTest, LargeTiledMatchesDefinition) {
  const int64_t b = 2, r = 37, c = 45;
  std::vector<float> v(b * r * c);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Transpose", {In(T1<float>({b, r, c}, v))}, Ints("perm", {0, 2, 1})));
  ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{b, c, r}));
  const float* out = y[0].data<float>();
  for (int64_t k = 0; k < b; ++k) {
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t j = 0; j < r; ++j) ASSERT_EQ(out[(k * c + i) * r + j], v[(k * r + j) * c + i]) << k << i << j;
    }
  }
  // Default perm reverses the axes.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto d, RunOneNode("Transpose", {In(T1<float>({2, 3}, {1, 2, 3, 4, 5, 6}))}));
  EXPECT_EQ(Values<float>(d[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  auto bad = RunOneNode("Transpose", {In(T1<float>({2, 3}, {1, 2, 3, 4, 5, 6}))}, Ints("perm", {0, 0}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// UINT8 transposes that are batches of whole matrix transposes (the byte-tile path: attention's
// K^T, a batch of matrices, a size-1 axis dropped) and ones that are not, against the definition.
TEST(TransposeTest, ByteMatrixBatchesMatchDefinition) {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  const Case cases[] = {{{17, 24, 64}, {1, 2, 0}}, {{3, 20, 37}, {0, 2, 1}}, {{20, 1, 37}, {2, 1, 0}},
                        {{17, 24, 64}, {1, 0, 2}}, {{5, 16, 8}, {0, 2, 1}}};
  for (const Case& c : cases) {
    const std::vector<int64_t>& d = c.dims;
    std::vector<uint8_t> v(d[0] * d[1] * d[2]);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * 37 + i / 251);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Transpose", {In(T1<uint8_t>(d, v))}, Ints("perm", c.perm)));
    const std::vector<int64_t> out = {d[c.perm[0]], d[c.perm[1]], d[c.perm[2]]};
    ASSERT_EQ(y[0].dims(), out);
    const std::vector<uint8_t> got = Values<uint8_t>(y[0]);
    int64_t idx[3];
    for (idx[0] = 0; idx[0] < d[0]; ++idx[0]) {
      for (idx[1] = 0; idx[1] < d[1]; ++idx[1]) {
        for (idx[2] = 0; idx[2] < d[2]; ++idx[2]) {
          const int64_t o = (idx[c.perm[0]] * out[1] + idx[c.perm[1]]) * out[2] + idx[c.perm[2]];
          ASSERT_EQ(got[o], v[(idx[0] * d[1] + idx[1]) * d[2] + idx[2]]) << ir::DimsToString(d);
        }
      }
    }
  }
}

TEST(ConcatTest, EmptyInputAndMismatch) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Concat", {In(T1<int64_t>({2, 1}, {1, 2})), In(Tensor(DataType::kInt64, {2, 0})),
                                                           In(T1<int64_t>({2, 2}, {3, 4, 5, 6}))},
                                                Int("axis", -1)));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<int64_t>(y[0]), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
  auto bad = RunOneNode("Concat", {In(T1<float>({2, 1}, {1, 2})), In(T1<float>({3, 1}, {1, 2, 3}))}, Int("axis", 1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitTest, DefaultUnevenAndBadSizes) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Split", {In(T1<float>({5}, {1, 2, 3, 4, 5}))}, {}, 2));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(Values<float>(y[1]), (std::vector<float>{4, 5}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto z, RunOneNode("Split", {In(T1<float>({2, 2}, {1, 2, 3, 4})), Const(T1<int64_t>({2}, {0, 2}))},
                                                Int("axis", 1), 2));
  EXPECT_EQ(z[0].dims(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(Values<float>(z[1]), (std::vector<float>{1, 2, 3, 4}));
  auto bad = RunOneNode("Split", {In(T1<float>({4}, {1, 2, 3, 4})), Const(T1<int64_t>({2}, {1, 2}))}, {}, 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SliceTest, NegativeStepsClampAndHugeBounds) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor x = T1<float>({2, 5}, {0, 1, 2, 3, 4, 10, 11, 12, 13, 14});
  // Axis 1 from 100 (clamped to 4) down to the beginning, step -2; axis 0 [-1, max).
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Slice", {In(x), Const(T1<int64_t>({2}, {100, -1})),
                                                          Const(T1<int64_t>({2}, {-kMax, kMax})),
                                                          Const(T1<int64_t>({2}, {1, 0})),
                                                          Const(T1<int64_t>({2}, {-2, 1}))}));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Values<float>(y[0]), (std::vector<float>{14, 12, 10}));
  // Empty result when start is past end.
  QFUSE_ASSERT_OK_AND_ASSIGN(auto e, RunOneNode("Slice", {In(x), Const(T1<int64_t>({1}, {4})), Const(T1<int64_t>({1}, {2})),
                                                          Const(T1<int64_t>({1}, {1}))}));
  EXPECT_EQ(e[0].dims(), (std::vector<int64_t>{2, 0}));
  auto zero = RunOneNode("Slice", {In(x), Const(T1<int64_t>({1}, {0})), Const(T1<int64_t>({1}, {2})),
                                   Const(T1<int64_t>({1}, {0})), Const(T1<int64_t>({1}, {0}))});
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GatherTest, Int32IndicesOnAxisOneAndOutOfRange) {
  Tensor x = T1<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto y, RunOneNode("Gather", {In(x), Const(T1<int32_t>({2, 2}, {2, 0, -1, 1}))}, Int("axis", 1)));
  EXPECT_EQ(y[0].dims(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(Values<uint8_t>(y[0]), (std::vector<uint8_t>{3, 1, 3, 2, 6, 4, 6, 5}));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto s, RunOneNode("Gather", {In(x), Const(Tensor::Scalar<int64_t>(1))}));
  EXPECT_EQ(s[0].dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(Values<uint8_t>(s[0]), (std::vector<uint8_t>{4, 5, 6}));
  auto bad = RunOneNode("Gather", {In(x), Const(T1<int64_t>({1}, {3}))}, Int("axis", 1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("out of range"), std::string::npos);
}

}  // namespace
}  // namespace qfuse::testing
