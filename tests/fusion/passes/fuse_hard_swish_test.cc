// HardSwish written out as x * Clip(x + 3, 0, 6) / 6 (paddle2onnx's form) becomes one HardSwish:
// its values against the formula computed in double, the rewritten graph against the original
// on the float runtime, the forms that must stay, and the unit it then joins at level full.
#include "fusion/passes/fuse_hard_swish.h"

#include <cmath>
#include <map>

#include "fusion/equivalence.h"
#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/fused_unit.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/op_counts.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::fusion {
namespace {

using testing::GraphBuilder;

using testing::OpCounts;

struct Form {
  bool add_const_first = false;  // Add(3, x)
  bool mul_clip_first = false;   // Mul(clip, x)
  bool times_sixth = false;      // Mul(m, 1/6) instead of Div(m, 6)
  float add = 3.f, lo = 0.f, hi = 6.f, divisor = 6.f;
};

// x [1, 16] -> the written-out HardSwish -> "y" (a graph output).
void Build(GraphBuilder& b, const Form& f) {
  const std::vector<int64_t> dims = {1, 16};
  ir::Value* x = b.Input("x", dims);
  ir::Value* three = b.Floats("three", {}, {f.add});
  ir::Value* t =
      b.Op("Add", f.add_const_first ? std::vector<ir::Value*>{three, x} : std::vector<ir::Value*>{x, three}, "t", dims);
  ir::Value* c = b.Op("Clip", {t, b.Floats("lo", {}, {f.lo}), b.Floats("hi", {}, {f.hi})}, "c", dims);
  ir::Value* m =
      b.Op("Mul", f.mul_clip_first ? std::vector<ir::Value*>{c, x} : std::vector<ir::Value*>{x, c}, "m", dims);
  b.Output(f.times_sixth ? b.Op("Mul", {m, b.Floats("sixth", {1}, {1.f / 6.f})}, "y", dims)
                         : b.Op("Div", {m, b.Floats("six", {}, {f.divisor})}, "y", dims));
}

int64_t RunPass(GraphBuilder& b) {
  std::vector<PipelineStep> steps;
  steps.push_back({std::make_unique<FuseHardSwishPass>()});
  absl::StatusOr<std::vector<PassStats>> stats = RunPipeline(steps, &b.model());
  EXPECT_TRUE(stats.ok()) << stats.status();
  return stats.ok() ? (*stats)[0].rewrites : -1;
}

TEST(FuseHardSwishTest, EveryOperandOrderAndBothScalingsBecomeOneHardSwish) {
  for (int bits = 0; bits < 8; ++bits) {
    Form f;
    f.add_const_first = bits & 1;
    f.mul_clip_first = bits & 2;
    f.times_sixth = bits & 4;
    SCOPED_TRACE(bits);
    GraphBuilder b;
    Build(b, f);
    std::unique_ptr<ir::Graph> before = b.graph().Clone();
    EXPECT_EQ(RunPass(b), 1);
    EXPECT_EQ(OpCounts(b.graph()), (std::map<std::string, int>{{"HardSwish", 1}}));
    EXPECT_EQ(b.graph().outputs()[0]->name(), "y");
    // Values on both sides of each corner (-3, 0, 3), against x * min(max(x + 3, 0), 6) / 6 in
    // double: within a few float32 roundings of it.
    ir::Tensor x(ir::DataType::kFloat32, {1, 16});
    const float xs[16] = {-100.f, -4.f, -3.001f, -3.f, -2.999f, -1.5f,  -0.25f, 0.f,
                          1e-3f,  0.7f, 1.f,     2.9f, 3.f,     3.001f, 5.5f,   250.f};
    std::copy(xs, xs + 16, x.mutable_values<float>().begin());
    QFUSE_ASSERT_OK_AND_ASSIGN(auto exec, runtime::Executor::Create(b.graph()));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto out, exec->Run({{"x", x}}));
    for (int i = 0; i < 16; ++i) {
      const double v = xs[i], want = v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
      EXPECT_NEAR(out[0].tensor.data<float>()[i], want, 4e-7 * std::max(1.0, std::fabs(want))) << "x = " << v;
    }
    EquivalenceOptions options;
    options.input_sets.push_back({{"x", x}});
    QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph(), options));
    EXPECT_LE(report.max_abs_diff, 3e-5) << report.ToString();  // 250's 2 ulps
  }
}

TEST(FuseHardSwishTest, OtherConstantsStay) {
  for (int which = 0; which < 4; ++which) {
    Form f;
    if (which == 0) f.add = 2.9f;
    if (which == 1) f.lo = -0.5f;
    if (which == 2) f.hi = 5.f;
    if (which == 3) f.divisor = 5.f;
    SCOPED_TRACE(which);
    GraphBuilder b;
    Build(b, f);
    EXPECT_EQ(RunPass(b), 0);
    EXPECT_EQ(b.graph().num_nodes(), 4);
  }
}

// An intermediate read elsewhere (here x + 3 is also a graph output) keeps the four ops; so
// does a Mul whose other operand is not the Add's x.
TEST(FuseHardSwishTest, SharedIntermediatesAndAnotherMultiplicandStay) {
  {
    GraphBuilder b;
    Build(b, Form{});
    QFUSE_ASSERT_OK(b.graph().MarkOutput(b.graph().FindValue("t")));
    EXPECT_EQ(RunPass(b), 0);
    EXPECT_EQ(b.graph().num_nodes(), 4);
  }
  {
    GraphBuilder b;
    const std::vector<int64_t> dims = {1, 16};
    ir::Value* x = b.Input("x", dims);
    ir::Value* z = b.Input("z", dims);
    ir::Value* t = b.Op("Add", {x, b.Floats("three", {}, {3.f})}, "t", dims);
    ir::Value* c = b.Op("Clip", {t, b.Floats("lo", {}, {0.f}), b.Floats("hi", {}, {6.f})}, "c", dims);
    ir::Value* m = b.Op("Mul", {z, c}, "m", dims);
    b.Output(b.Op("Div", {m, b.Floats("six", {}, {6.f})}, "y", dims));
    EXPECT_EQ(RunPass(b), 0);
    EXPECT_EQ(b.graph().num_nodes(), 4);
  }
}

// At level full the rewritten HardSwish joins the Conv before it: one unit, activation
// hard_swish, as PaddleOCR's Conv -> BN -> written-out HardSwish blocks now fuse.
TEST(FuseHardSwishTest, JoinsTheConvUnitAtLevelFull) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {1, 2, 4, 4};
  ir::Value* x = b.Input("x", dims);
  ir::Value* conv = b.Op("Conv", {x, b.Random("w", {2, 2, 3, 3}), b.Random("bias", {2})}, "conv", dims,
                         GraphBuilder::Attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  ir::Value* t = b.Op("Add", {conv, b.Floats("three", {}, {3.f})}, "t", dims);
  ir::Value* c = b.Op("Clip", {t, b.Floats("lo", {}, {0.f}), b.Floats("hi", {}, {6.f})}, "c", dims);
  ir::Value* m = b.Op("Mul", {conv, c}, "m", dims);
  b.Output(b.Op("Div", {m, b.Floats("six", {}, {6.f})}, "y", dims));
  std::unique_ptr<ir::Graph> before = b.graph().Clone();
  QFUSE_ASSERT_OK(Fuse(&b.model(), FusionLevel::kFull).status());
  ASSERT_EQ(b.graph().num_nodes(), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::UnitSpec spec, ir::ReadUnitSpec(*b.graph().outputs()[0]->producer()));
  EXPECT_EQ(spec.activation, ir::UnitActivation::kHardSwish);
  QFUSE_ASSERT_OK_AND_ASSIGN(EquivalenceReport report, CompareGraphsNumerically(*before, b.graph()));
  EXPECT_LE(report.max_abs_diff, 1e-5) << report.ToString();
}

// A divisor 6 of shape [1, 1] on an x of rank 1 makes the output [1, 4]: HardSwish(x) would be
// [4], so the chain stays (a helper's review found the rank lost).
TEST(FuseHardSwishTest, AConstantThatRaisesTheRankStays) {
  GraphBuilder b;
  const std::vector<int64_t> dims = {4};
  ir::Value* x = b.Input("x", dims);
  ir::Value* t = b.Op("Add", {x, b.Floats("three", {}, {3.f})}, "t", dims);
  ir::Value* c = b.Op("Clip", {t, b.Floats("lo", {}, {0.f}), b.Floats("hi", {}, {6.f})}, "c", dims);
  ir::Value* m = b.Op("Mul", {x, c}, "m", dims);
  b.Output(b.Op("Div", {m, b.Floats("six", {1, 1}, {6.f})}, "y", {1, 4}));
  EXPECT_EQ(RunPass(b), 0);
  EXPECT_EQ(b.graph().num_nodes(), 4);
}

}  // namespace
}  // namespace qfuse::fusion
