// NonNegativeValues and LowerBounds (ir/value_sign.h): the rules on hand-picked nodes; on the
// two sample models (fused, float) every value named non-negative has no negative element when
// the model runs on random inputs in [-3, 3], while values left out do go negative; and a
// HardSwish/SiLU graph run on inputs in [-6, 6] stays above each bound and comes within 0.01
// of it (the bounds are tight, not just safe).
#include "ir/value_sign.h"

#include <algorithm>
#include <string>

#include "fusion/pipeline.h"
#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "runtime/executor.h"
#include "runtime/random_inputs.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

TEST(ValueSignTest, EachRuleOnItsOwnNode) {
  testing::GraphBuilder b;
  Value* x = b.Input("x", {1, 2, 4, 4});
  Value* relu = b.Op("Relu", {x}, "relu");
  Value* pooled = b.Op("MaxPool", {relu}, "pooled", {}, testing::GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  Value* gap = b.Op("GlobalAveragePool", {relu}, "gap");
  Value* hswish = b.Op("HardSwish", {x}, "hswish");
  Value* sigmoid = b.Op("Sigmoid", {x}, "sigmoid");
  Value* relu6 = b.Op("Clip", {x, b.Floats("zero", {}, {0.f}), b.Floats("six", {}, {6.f})}, "relu6");
  Value* clip_signed = b.Op("Clip", {x, b.Floats("minus_one", {}, {-1.f}), b.Floats("one", {}, {1.f})}, "clip_signed");
  Value* concat_ok = b.Op("Concat", {relu, relu6}, "concat_ok", {}, testing::GraphBuilder::Attrs({{"axis", int64_t{1}}}));
  Value* concat_mixed = b.Op("Concat", {relu, hswish}, "concat_mixed", {}, testing::GraphBuilder::Attrs({{"axis", int64_t{1}}}));
  Value* gated = b.Op("Mul", {relu, sigmoid}, "gated");
  Value* silu = b.Op("Mul", {x, sigmoid}, "silu");
  Value* shifted_up = b.Op("Add", {relu, b.Floats("two", {1}, {2.f})}, "shifted_up");
  Value* shifted_down = b.Op("Add", {relu, b.Floats("minus_half", {1}, {-0.5f})}, "shifted_down");
  Value* max_any = b.Op("Max", {x, relu}, "max_any");
  Value* min_mixed = b.Op("Min", {x, relu}, "min_mixed");
  Value* pad_zero = b.Op("Pad", {relu, b.Ints("pads", {0, 0, 1, 1, 0, 0, 1, 1})}, "pad_zero");
  Value* pad_negative =
      b.Op("Pad", {relu, b.Ints("pads2", {0, 0, 1, 1, 0, 0, 1, 1}), b.Floats("minus_two", {}, {-2.f})}, "pad_negative");
  Value* cubic = b.Op("Resize", {relu}, "cubic", {}, testing::GraphBuilder::Attrs({{"mode", std::string("cubic")}}));
  Value* nearest = b.Op("Resize", {relu}, "nearest");
  Value* softmax = b.Op("Softmax", {x}, "softmax");
  Value* log_softmax = b.Op("LogSoftmax", {x}, "log_softmax");

  QFUSE_ASSERT_OK_AND_ASSIGN(auto non_negative, NonNegativeValues(b.graph()));
  for (Value* v : {relu, pooled, gap, sigmoid, relu6, concat_ok, gated, shifted_up, max_any, pad_zero, nearest, softmax}) {
    EXPECT_TRUE(non_negative.contains(v)) << v->name();
  }
  for (Value* v : {x, hswish, clip_signed, concat_mixed, silu, shifted_down, min_mixed, pad_negative, cubic, log_softmax}) {
    EXPECT_FALSE(non_negative.contains(v)) << v->name();
  }
}

TEST(ValueSignTest, UnitsByTheirActivation) {
  for (UnitActivation activation : {UnitActivation::kRelu, UnitActivation::kHardSigmoid, UnitActivation::kSigmoid}) {
    EXPECT_TRUE(IsNonNegativeActivation(UnitSpec{UnitBaseOp::kConv, activation}));
  }
  for (UnitActivation activation : {UnitActivation::kNone, UnitActivation::kHardSwish, UnitActivation::kSilu,
                                    UnitActivation::kLeakyRelu}) {
    EXPECT_FALSE(IsNonNegativeActivation(UnitSpec{UnitBaseOp::kConv, activation}));
  }
  EXPECT_TRUE(IsNonNegativeActivation(ClipSpec(0.f, 6.f)));
  EXPECT_TRUE(IsNonNegativeActivation(ClipSpec(0.5f, 2.f)));
  EXPECT_FALSE(IsNonNegativeActivation(ClipSpec(-0.5f, 2.f)));
}

TEST(ValueSignTest, LowerBoundsOfBoundedActivationsAndWhatCombinesThem) {
  testing::GraphBuilder b;
  Value* x = b.Input("x", {64, 1, 8, 8});
  Value* hswish = b.Op("HardSwish", {x}, "hswish");
  Value* sigmoid = b.Op("Sigmoid", {x}, "sigmoid");
  Value* silu = b.Op("Mul", {x, sigmoid}, "silu");  // not an activation node: Mul of x and a bounded value
  Value* relu = b.Op("Relu", {x}, "relu");
  Value* clip = b.Op("Clip", {x, b.Floats("lo", {}, {-1.f}), b.Floats("hi", {}, {1.f})}, "clip");
  Value* concat = b.Op("Concat", {hswish, relu}, "concat", {}, testing::GraphBuilder::Attrs({{"axis", int64_t{1}}}));
  Value* sum = b.Op("Add", {hswish, clip}, "sum");
  Value* pooled = b.Op("GlobalAveragePool", {hswish}, "pooled");
  Value* reduced = b.Op("ReduceSum", {hswish}, "reduced");
  Value* maxed = b.Op("Max", {x, hswish}, "maxed");
  for (Value* v : {hswish, concat, sum, pooled, clip, maxed}) b.Output(v);
  QFUSE_ASSERT_OK_AND_ASSIGN(ValueLowerBounds bounds, LowerBounds(b.graph()));
  auto bound = [&](Value* v) -> std::optional<float> {
    auto it = bounds.find(v);
    return it == bounds.end() ? std::nullopt : std::optional<float>(it->second);
  };
  EXPECT_EQ(bound(hswish), kHardSwishMin);
  EXPECT_EQ(bound(relu), 0.f);
  EXPECT_EQ(bound(clip), -1.f);
  EXPECT_EQ(bound(concat), kHardSwishMin);
  EXPECT_EQ(bound(sum), kHardSwishMin - 1.f);
  EXPECT_EQ(bound(pooled), kHardSwishMin);
  EXPECT_EQ(bound(maxed), kHardSwishMin);
  EXPECT_FALSE(bound(x).has_value());
  EXPECT_FALSE(bound(silu).has_value());     // x * Sigmoid(x) as two nodes: x is unbounded
  EXPECT_FALSE(bound(reduced).has_value());  // a sum of many negatives
  UnitSpec silu_spec{UnitBaseOp::kConv, UnitActivation::kSilu};
  EXPECT_EQ(ActivationLowerBound(silu_spec), kSiluMin);

  // Run on inputs in [-6, 6]: every element is above its bound, and the least comes within 0.01.
  runtime::RandomInputOptions random;
  random.low = -6.f;
  random.high = 6.f;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto inputs, runtime::RandomInputs(b.graph(), random));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto executor, runtime::Executor::Create(b.graph()));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<runtime::NamedTensor> outputs, executor->Run(inputs));
  for (const runtime::NamedTensor& out : outputs) {
    const float lo = *bound(b.graph().FindValue(out.name));
    float min = 1e9f;
    for (float f : out.tensor.values<float>()) min = std::min(min, f);
    EXPECT_GE(min, lo) << out.name;
    if (out.name != "pooled") {
      EXPECT_LT(min, lo + 0.01f) << out.name;  // a mean does not reach its inputs' least value
    }
  }
  // SiLU's bound, on a dense sweep through its minimum at -1.2785 with the runtime's logistic.
  float silu_min = 0.f;
  for (int i = 0; i <= 20000; ++i) {
    const float v = -3.f + 2.f * static_cast<float>(i) / 20000.f;
    silu_min = std::min(silu_min, ApplyUnitActivation(silu_spec, v));
  }
  EXPECT_GE(silu_min, kSiluMin);
  EXPECT_LT(silu_min, kSiluMin + 0.001f);
}

// Runs the fused float model with every value as an output: the named ones have min >= 0.
void CheckByRunning(const std::string& sample, fusion::FusionLevel level) {
  QFUSE_ASSERT_OK_AND_ASSIGN(Model model, LoadModel("models/" + sample + "/model.onnx"));
  QFUSE_ASSERT_OK(fusion::Fuse(&model, level).status());
  QFUSE_ASSERT_OK_AND_ASSIGN(auto non_negative, NonNegativeValues(*model.graph));
  std::vector<Value*> candidates;
  for (Node* n : model.graph->nodes()) {
    for (Value* out : n->outputs()) {
      if (out != nullptr && out->type().dtype == DataType::kFloat32 && !out->is_graph_output()) {
        candidates.push_back(out);
        QFUSE_ASSERT_OK(model.graph->MarkOutput(out));
      }
    }
  }
  runtime::RandomInputOptions random;
  random.batch = 8;
  random.low = -3.f;
  random.high = 3.f;
  QFUSE_ASSERT_OK_AND_ASSIGN(auto inputs, runtime::RandomInputs(*model.graph, random));
  QFUSE_ASSERT_OK_AND_ASSIGN(auto executor, runtime::Executor::Create(*model.graph));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<runtime::NamedTensor> outputs, executor->Run(inputs));
  int named = 0, negative_elsewhere = 0;
  for (const runtime::NamedTensor& out : outputs) {
    const Value* v = model.graph->FindValue(out.name);
    ASSERT_NE(v, nullptr) << out.name;
    float min = 0.f;
    for (float f : out.tensor.values<float>()) min = std::min(min, f);
    if (non_negative.contains(v)) {
      ++named;
      EXPECT_GE(min, 0.f) << sample << ": " << out.name;
    } else {
      negative_elsewhere += min < 0.f;
    }
  }
  EXPECT_GT(named, 5) << sample;
  EXPECT_GT(negative_elsewhere, 2) << sample;
}

TEST(ValueSignTest, SampleModelsRunNonNegativeWhereNamed) {
  for (fusion::FusionLevel level : {fusion::FusionLevel::kFull, fusion::FusionLevel::kNone}) {
    CheckByRunning("resnet_small", level);
    CheckByRunning("mobilenetv2_small", level);
  }
}

}  // namespace
}  // namespace qfuse::ir
