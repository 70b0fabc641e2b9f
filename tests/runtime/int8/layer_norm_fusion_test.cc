// Pattern (h) of the QDQ lowering: the pre-opset-17 LayerNorm chain in a float region becomes
// one LayerNormalization, which gives the chain's values (checked against a double-precision
// computation by hand), and chains that differ anywhere keep their nine ops; the RMS tail alone
// becomes one qfuse.SimplifiedLayerNormalization (onnxruntime's fused form).
#include "runtime/int8/layer_norm_fusion.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/int8/qdq_lowering.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/qdq_graph.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::Value;
using testing::QdqGraph;

constexpr float kXScale = 0.05f;
constexpr int8_t kXZero = 3;
constexpr float kEpsilon = 1e-3f;

// How a test's chain departs from the LayerNorm form.
struct ChainShape {
  std::vector<int64_t> dims = {2, 3, 8};
  std::vector<int64_t> axes = {-1};
  float exponent = 2.f;
  bool difference_is_an_output = false;  // Sub's output also a graph output
  // x the DequantizeLinear's output itself; otherwise x = Add(DQ(x), DQ(x)), exactly twice it,
  // from a float op as a residual Add writes it.
  bool x_is_dequantized = false;
};

std::vector<float> Scale(int64_t n) {
  std::vector<float> s;
  for (int64_t i = 0; i < n; ++i) s.push_back(0.5f + 0.125f * static_cast<float>(i));
  return s;
}

std::vector<float> Bias(int64_t n) {
  std::vector<float> b;
  for (int64_t i = 0; i < n; ++i) b.push_back(0.25f * static_cast<float>(i) - 1.f);
  return b;
}

// x -> ReduceMean -> Sub -> Pow -> ReduceMean -> Add eps -> Sqrt -> Div -> Mul -> Add, as
// PyTorch exports nn.LayerNorm before opset 17, with a float graph output; x is DQ(x) or
// Add(DQ(x), DQ(x)) (ChainShape::x_is_dequantized).
void BuildChain(QdqGraph& b, const ChainShape& shape) {
  const std::vector<int64_t>& dims = shape.dims;
  std::vector<int64_t> stat_dims = dims;
  for (int64_t a : shape.axes) stat_dims[a < 0 ? a + static_cast<int64_t>(dims.size()) : a] = 1;
  const int64_t last = dims.back();
  Value* gamma = *b.graph().AddConstant("gamma", ir::Tensor::FromVector<float>({last}, Scale(last)));
  Value* beta = *b.graph().AddConstant("beta", ir::Tensor::FromVector<float>({last}, Bias(last)));
  ir::AttributeMap reduce;
  reduce.Set("axes", shape.axes);
  Value* x = b.Input("x", dims, kXScale, kXZero);
  if (!shape.x_is_dequantized) x = b.Op("Add", {x, x}, dims);
  Value* mean = b.Op("ReduceMean", {x}, stat_dims, reduce);
  Value* d = b.Op("Sub", {x, mean}, dims);
  Value* var = b.Op("ReduceMean", {b.Op("Pow", {d, b.FloatConst("two", shape.exponent)}, dims)}, stat_dims, reduce);
  Value* std_dev = b.Op("Sqrt", {b.Op("Add", {var, b.FloatConst("eps", kEpsilon)}, stat_dims)}, stat_dims);
  Value* y = b.Op("Add", {b.Op("Mul", {b.Op("Div", {d, std_dev}, dims), gamma}, dims), beta}, dims);
  b.FloatOutput(y);
  if (shape.difference_is_an_output) b.FloatOutput(d);
}

using testing::OpCounts;

// Random int8 values for x.
ir::Tensor RandomInput(const std::vector<int64_t>& dims) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> dist(-128, 127);
  ir::Tensor t = *ir::Tensor::Create(ir::DataType::kInt8, dims);
  for (int8_t& v : t.mutable_values<int8_t>()) v = static_cast<int8_t>(dist(rng));
  return t;
}

// The chain's output in double: (v - mean) / sqrt(var + eps) * gamma + beta over rows of
// `cols` values, v = x_factor * kXScale * (x - kXZero) (x_factor 2 where x = Add(DQ(x), DQ(x))),
// gamma and beta indexed by the last dim `last`.
std::vector<double> LayerNormInDouble(const ir::Tensor& x, int64_t cols, int64_t last, double x_factor) {
  const std::vector<float> gamma = Scale(last);
  const std::vector<float> beta = Bias(last);
  const auto xv = x.values<int8_t>();
  std::vector<double> want(xv.size());
  for (int64_t row = 0; row < static_cast<int64_t>(xv.size()) / cols; ++row) {
    auto v = [&](int64_t i) { return x_factor * kXScale * (xv[row * cols + i] - kXZero); };
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i) mean += v(i);
    mean /= static_cast<double>(cols);
    for (int64_t i = 0; i < cols; ++i) var += std::pow(v(i) - mean, 2);
    var /= static_cast<double>(cols);
    for (int64_t i = 0; i < cols; ++i) {
      const int64_t k = row * cols + i;
      want[k] = (v(i) - mean) / std::sqrt(var + kEpsilon) * gamma[k % last] + beta[k % last];
    }
  }
  return want;
}

TEST(LayerNormFusionTest, TheChainBecomesOneLayerNormalization) {
  QdqGraph b;
  BuildChain(b, ChainShape{});
  const Value* x = b.graph().FindValue("x_dequantized")->uses()[0].node->output(0);
  std::string first_name;
  for (const ir::Use& use : x->uses()) {
    if (use.node->op_type() == "ReduceMean") first_name = use.node->name();
  }
  const std::string x_name = x->name();
  const std::string output_name = b.graph().outputs()[0]->name();
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
  EXPECT_EQ(stats.layer_norms, 1);
  EXPECT_EQ(OpCounts(b.graph()),
            (std::map<std::string, int>{{"DequantizeLinear", 1}, {"Add", 1}, {"LayerNormalization", 1}}));
  const ir::Node* ln = b.graph().outputs()[0]->producer();
  ASSERT_EQ(ln->op_type(), "LayerNormalization");
  EXPECT_EQ(ln->name(), first_name);
  EXPECT_EQ(b.graph().outputs()[0]->name(), output_name);
  ASSERT_EQ(ln->inputs().size(), 3u);
  EXPECT_EQ(ln->input(0)->name(), x_name);
  EXPECT_EQ(ln->input(1)->name(), "gamma");
  EXPECT_EQ(ln->input(2)->name(), "beta");
  EXPECT_EQ(*ln->attrs().GetInt("axis", 0), -1);
  EXPECT_EQ(*ln->attrs().GetFloat("epsilon", 0.f), kEpsilon);
}

// A chain whose x is a DequantizeLinear's output keeps ReduceMean, Sub and the bias Add, and its
// RMS tail becomes one qfuse.SimplifiedLayerNormalization, as in onnxruntime: there the ReduceMean
// and the Sub read two copies of the DequantizeLinear, and LayerNormFusion does not apply (seen
// in onnxruntime 1.30's optimized Swin-T, whose four such chains are SimplifiedLayerNormalization
// and whose other 25 LayerNormalization). The values stay the LayerNorm's (against double).
TEST(LayerNormFusionTest, AChainReadingADequantizeLinearKeepsItsMeanAndBias) {
  ChainShape shape;
  shape.x_is_dequantized = true;
  shape.dims = {2, 3, 24};
  QdqGraph b;
  BuildChain(b, shape);
  QdqGraph lowered;
  BuildChain(lowered, shape);
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&lowered.graph()));
  EXPECT_EQ(stats.layer_norms, 1);
  EXPECT_EQ(
      OpCounts(lowered.graph()),
      (std::map<std::string, int>{
          {"DequantizeLinear", 1}, {"ReduceMean", 1}, {"Sub", 1}, {"SimplifiedLayerNormalization", 1}, {"Add", 1}}));
  const ir::Tensor x = RandomInput(shape.dims);
  ExecutorOptions options;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out, exec->Run({{"x", x}}));
  const auto got = out[0].tensor.values<float>();
  const std::vector<double> want = LayerNormInDouble(x, shape.dims[2], shape.dims[2], 1.0);
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_NEAR(got[k], want[k], 2e-6 * (1 + std::abs(want[k]))) << "element " << k;
  }
}

// The executor lowers (and fuses) with integer kernels and runs the nine float ops without;
// both must give (x - mean) / sqrt(var + eps) * gamma + beta, computed here in double.
TEST(LayerNormFusionTest, FusedAndUnfusedGiveTheLayerNorm) {
  for (const std::vector<int64_t>& axes : {std::vector<int64_t>{-1}, std::vector<int64_t>{1, 2}}) {
    ChainShape shape;
    shape.axes = axes;
    QdqGraph b;
    BuildChain(b, shape);
    const ir::Tensor x = RandomInput(shape.dims);
    std::map<bool, std::vector<float>> outputs;
    for (bool integer_kernels : {true, false}) {
      ExecutorOptions options;
      options.integer_kernels = integer_kernels;
      QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
      EXPECT_EQ(OpCounts(exec->graph()).count("LayerNormalization"), integer_kernels ? 1u : 0u);
      QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out, exec->Run({{"x", x}}));
      const auto v = out[0].tensor.values<float>();
      outputs[integer_kernels].assign(v.begin(), v.end());
    }
    const int64_t cols = axes.size() == 1 ? shape.dims[2] : shape.dims[1] * shape.dims[2];
    // x = Add(DQ(x), DQ(x)): twice the dequantized value, exactly.
    const std::vector<double> want = LayerNormInDouble(x, cols, shape.dims[2], 2.0);
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_NEAR(outputs[true][k], want[k], 2e-6 * (1 + std::abs(want[k]))) << "fused, element " << k;
      EXPECT_NEAR(outputs[false][k], want[k], 2e-6 * (1 + std::abs(want[k]))) << "nine ops, element " << k;
    }
  }
}

TEST(LayerNormFusionTest, ChainsThatDifferKeepTheirOps) {
  ChainShape cube;
  cube.exponent = 3.f;
  ChainShape middle_axis;
  middle_axis.axes = {1};
  ChainShape difference_read_elsewhere;
  difference_read_elsewhere.difference_is_an_output = true;
  for (const ChainShape& shape : {cube, middle_axis}) {
    QdqGraph b;
    BuildChain(b, shape);
    QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
    EXPECT_EQ(stats.layer_norms, 0);
    EXPECT_EQ(OpCounts(b.graph()).at("ReduceMean"), 2);
    EXPECT_EQ(OpCounts(b.graph()).count("LayerNormalization"), 0u);
  }
  // A difference read elsewhere keeps the full pattern off; its RMS tail (Pow .. Mul) is still
  // one region, which onnxruntime's SimplifiedLayerNormFusion takes, and so does qfuse.
  QdqGraph b;
  BuildChain(b, difference_read_elsewhere);
  QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
  EXPECT_EQ(stats.layer_norms, 1);
  EXPECT_EQ(OpCounts(b.graph()).at("ReduceMean"), 1);
  EXPECT_EQ(OpCounts(b.graph()).count("LayerNormalization"), 0u);
  EXPECT_EQ(OpCounts(b.graph()).at("SimplifiedLayerNormalization"), 1);
}

// A chain fed by a Transpose: between two Transposes (ConvNeXt's LayerNorm2d: permute,
// LayerNorm, permute back) it keeps its ops, full or RMS tail, as onnxruntime's transpose
// optimizer leaves it; after a Transpose alone (Swin-T's patch embedding, whose Transpose
// onnxruntime moves into a channels-last convolution) the full pattern is not taken and the RMS
// tail becomes one qfuse.SimplifiedLayerNormalization, as in onnxruntime.
TEST(LayerNormFusionTest, AChainAfterATransposeFusesOnlyItsRmsTailUnlessATransposeFollows) {
  for (const bool full : {true, false}) {
    for (const bool transpose_after : {true, false}) {
      SCOPED_TRACE(absl::StrCat(full ? "full" : "RMS tail", transpose_after ? ", Transpose after" : ""));
      QdqGraph b;
      const std::vector<int64_t> dims = {2, 3, 16};
      Value* gamma = *b.graph().AddConstant("gamma", ir::Tensor::FromVector<float>({16}, Scale(16)));
      Value* beta = *b.graph().AddConstant("beta", ir::Tensor::FromVector<float>({16}, Bias(16)));
      ir::AttributeMap reduce;
      reduce.Set("axes", std::vector<int64_t>{-1});
      ir::AttributeMap perm;
      perm.Set("perm", std::vector<int64_t>{0, 2, 1});
      Value* x = b.Op("Transpose", {b.Input("x", {2, 16, 3}, kXScale, kXZero)}, dims, perm);
      Value* d = full ? b.Op("Sub", {x, b.Op("ReduceMean", {x}, {2, 3, 1}, reduce)}, dims) : x;
      Value* var = b.Op("ReduceMean", {b.Op("Pow", {d, b.FloatConst("two", 2.f)}, dims)}, {2, 3, 1}, reduce);
      Value* rms = b.Op("Sqrt", {b.Op("Add", {var, b.FloatConst("eps", kEpsilon)}, {2, 3, 1})}, {2, 3, 1});
      Value* y = b.Op("Add", {b.Op("Mul", {b.Op("Div", {d, rms}, dims), gamma}, dims), beta}, dims);
      b.FloatOutput(transpose_after ? b.Op("Transpose", {y}, {2, 16, 3}, perm) : y);
      QFUSE_ASSERT_OK_AND_ASSIGN(LoweringStats stats, LowerQdqToInteger(&b.graph()));
      EXPECT_EQ(OpCounts(b.graph()).count("LayerNormalization"), 0u);
      EXPECT_EQ(stats.layer_norms, transpose_after ? 0 : 1);
      EXPECT_EQ(OpCounts(b.graph()).count("Pow"), transpose_after ? 1u : 0u);
      EXPECT_EQ(OpCounts(b.graph()).count("SimplifiedLayerNormalization"), transpose_after ? 0u : 1u);
    }
  }
}

// The RMS tail as level none leaves it, the LayerNorm's bias Add past a QuantizeLinear:
// DQ(x) -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div(x, .) -> Mul(Identity(gamma)), the
// scale through an Identity (PyTorch's shared weights). Lowered, it is one
// qfuse.SimplifiedLayerNormalization; rows of 16 or more give x / sqrt(mean(x^2) + eps) * gamma
// (here against double), shorter rows onnxruntime's scalar form bit for bit (squares summed left
// to right in float; models/zoo/float_ops_probe.py matched it against onnxruntime for 5 to 15).
TEST(LayerNormFusionTest, TheRmsTailBecomesOneSimplifiedLayerNormalization) {
  for (const int64_t n : {int64_t{5}, int64_t{8}, int64_t{15}, int64_t{16}, int64_t{24}}) {
    SCOPED_TRACE(n);
    const std::vector<int64_t> dims = {4, 16, n};
    QdqGraph b;
    Value* gamma = *b.graph().AddConstant("gamma", ir::Tensor::FromVector<float>({n}, Scale(n)));
    ir::AttributeMap reduce;
    reduce.Set("axes", std::vector<int64_t>{-1});
    Value* x = b.Input("x", dims, kXScale, kXZero);
    Value* ms = b.Op("ReduceMean", {b.Op("Pow", {x, b.FloatConst("two", 2.f)}, dims)}, {4, 16, 1}, reduce);
    Value* rms = b.Op("Sqrt", {b.Op("Add", {ms, b.FloatConst("eps", kEpsilon)}, {4, 16, 1})}, {4, 16, 1});
    Value* shared = b.Op("Identity", {gamma}, {n});
    b.FloatOutput(b.Op("Mul", {b.Op("Div", {x, rms}, dims), shared}, dims));
    const ir::Tensor xq = RandomInput(dims);
    std::map<bool, std::vector<float>> outputs;
    for (bool integer_kernels : {true, false}) {
      ExecutorOptions options;
      options.integer_kernels = integer_kernels;
      QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, Executor::Create(b.graph(), options));
      EXPECT_EQ(OpCounts(exec->graph()).count("SimplifiedLayerNormalization"), integer_kernels ? 1u : 0u);
      QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out, exec->Run({{"x", xq}}));
      const auto v = out[0].tensor.values<float>();
      outputs[integer_kernels].assign(v.begin(), v.end());
    }
    const std::vector<float> g = Scale(n);
    const auto xv = xq.values<int8_t>();
    if (n < 16) {
      for (int64_t row = 0; row < 64; ++row) {
        float sum = 0.f;
        for (int64_t i = 0; i < n; ++i) {
          const float v = kXScale * static_cast<float>(xv[row * n + i] - kXZero);
          sum += v * v;
        }
        const float rms = std::sqrt(sum / static_cast<float>(n) + kEpsilon);
        for (int64_t i = 0; i < n; ++i) {
          const float v = kXScale * static_cast<float>(xv[row * n + i] - kXZero);
          EXPECT_EQ(outputs[true][row * n + i], v / rms * g[i]) << "fused, " << row << ", " << i;
        }
      }
      continue;
    }
    for (int64_t row = 0; row < 64; ++row) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) sum += std::pow(kXScale * (xv[row * n + i] - kXZero), 2);
      const double rms_want = std::sqrt(sum / static_cast<double>(n) + kEpsilon);
      for (int64_t i = 0; i < n; ++i) {
        const double want = kXScale * (xv[row * n + i] - kXZero) / rms_want * g[i];
        EXPECT_NEAR(outputs[true][row * n + i], want, 2e-6 * (1 + std::abs(want))) << "fused, " << row << ", " << i;
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::int8
