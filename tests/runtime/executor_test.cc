// The executor's lifetime plan: an intermediate is freed right after its last reader runs,
// an output nobody reads right after its producer, and graph outputs, inputs and constants
// never. Checked through peak_activation_bytes against peaks computed by hand, and through
// the outputs, which must not change when buffers are freed and the executor runs again.
#include "runtime/executor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/onnx_test_case.h"
#include "tests/testing/quantized_sample.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ::qfuse::testing::GraphBuilder;

constexpr int64_t kElements = 1000;
constexpr int64_t kBytes = kElements * 4;  // one float32 intermediate

ir::Tensor Ramp(float start) {
  std::vector<float> v(kElements);
  for (int64_t i = 0; i < kElements; ++i) v[i] = start + static_cast<float>(i) - 500.f;
  return ir::Tensor::FromVector<float>({1, kElements}, v);
}

// -v as Sub(0, v); the zero is a constant, which the plan never counts or frees.
ir::Value* Negate(GraphBuilder& b, ir::Value* v, const std::string& out) {
  return b.Op("Sub", {b.Floats(out + "_zero", {1}, {0.f}), v}, out, {1, kElements});
}

absl::StatusOr<std::vector<NamedTensor>> RunOnce(Executor& exec, float start) {
  return exec.Run({{"x", Ramp(start)}});
}

// x -> Relu -> Neg -> Neg -> Relu -> y: at most the step's input and its output are alive,
// and only the last one is kept.
TEST(ExecutorLifetimeTest, ChainHoldsTwoIntermediatesAtMost) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, kElements});
  ir::Value* a = b.Op("Relu", {x}, "a", {1, kElements});
  ir::Value* c = Negate(b, a, "c");
  ir::Value* d = Negate(b, c, "d");
  ir::Value* y = b.Op("Relu", {d}, "y", {1, kElements});
  b.Output(y);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(b.graph()));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> out, RunOnce(*exec, 0.f));
  EXPECT_EQ(exec->peak_activation_bytes(), 2 * kBytes);
  ASSERT_EQ(out.size(), 1u);
  absl::Span<const float> got = out[0].tensor.values<float>();
  for (int64_t i = 0; i < kElements; ++i) {
    const float xi = static_cast<float>(i) - 500.f;
    ASSERT_EQ(got[i], xi > 0 ? xi : 0.f) << i;
  }
}

// a = Relu(x) is read again by the last node, so it stays alive across the chain: three
// intermediates at the peak (the live set after each step is written next to it).
TEST(ExecutorLifetimeTest, ResidualStaysAliveUntilItsLastReader) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, kElements});
  ir::Value* a = b.Op("Relu", {x}, "a", {1, kElements});   // live: a                = 1
  ir::Value* c = Negate(b, a, "c");                          // live: a c              = 2
  ir::Value* d = Negate(b, c, "d");                          // live: a c d -> free c  = 3
  ir::Value* y = b.Op("Add", {d, a}, "y", {1, kElements});  // live: a d y -> free a d = 3
  b.Output(y);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(b.graph()));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> first, RunOnce(*exec, 0.f));
  EXPECT_EQ(exec->peak_activation_bytes(), 3 * kBytes);
  // y = Neg(Neg(Relu(x))) + Relu(x) = 2 * Relu(x): a freed too early would be garbage here.
  absl::Span<const float> got = first[0].tensor.values<float>();
  for (int64_t i = 0; i < kElements; ++i) {
    const float xi = static_cast<float>(i) - 500.f;
    ASSERT_EQ(got[i], xi > 0 ? 2 * xi : 0.f) << i;
  }
  // A second run on other inputs reuses nothing stale.
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> second, RunOnce(*exec, 250.f));
  absl::Span<const float> got2 = second[0].tensor.values<float>();
  for (int64_t i = 0; i < kElements; ++i) {
    const float xi = 250.f + static_cast<float>(i) - 500.f;
    ASSERT_EQ(got2[i], xi > 0 ? 2 * xi : 0.f) << i;
  }
}

// An output nobody reads (a side branch that is not a graph output) is freed right after its
// producer; a graph output that is also read later is never freed.
TEST(ExecutorLifetimeTest, UnreadOutputFreedAtOnceGraphOutputKept) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, kElements});
  ir::Value* a = b.Op("Relu", {x}, "a", {1, kElements});  // live: a                   = 1
  Negate(b, a, "unread");                                  // live: a unread -> free it = 2
  ir::Value* c = Negate(b, a, "c");                        // live: a c                 = 2
  ir::Value* y = b.Op("Add", {c, a}, "y", {1, kElements});  // live: a c y -> free c   = 3
  b.Output(a);
  b.Output(y);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(b.graph()));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> out, RunOnce(*exec, 0.f));
  EXPECT_EQ(exec->peak_activation_bytes(), 3 * kBytes);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "a");
  absl::Span<const float> relu = out[0].tensor.values<float>();
  absl::Span<const float> zero = out[1].tensor.values<float>();
  for (int64_t i = 0; i < kElements; ++i) {
    const float xi = static_cast<float>(i) - 500.f;
    ASSERT_EQ(relu[i], xi > 0 ? xi : 0.f) << i;
    ASSERT_EQ(zero[i], 0.f) << i;
  }
}

// RunOptions::kept hands over what the observer sees, without copies: every node output but
// the graph's outputs, in the plain layout (the int8 units of the sample run channels-last), on
// the first run and on the next ones, whose shape arithmetic comes from the memo; a value
// `keep` refuses is freed.
TEST(ExecutorKeepTest, KeptValuesAreTheObservedOnes) {
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, testing::QuantizeSample("mobilenetv2_small", fusion::FusionLevel::kFull,
                                                                      quant::ActivationType::kUint8));
  QFUSE_ASSERT_OK_AND_ASSIGN(testing::OnnxTestCase tc, testing::LoadOnnxTestCase("models/mobilenetv2_small"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(*model.graph));
  for (int round = 0; round < 3; ++round) {
    std::map<std::string, ir::Tensor> seen, kept;
    std::string refused;  // the first value produced: not kept
    RunOptions run;
    run.observer = [&](const ir::Value& v, const ir::Tensor& t) {
      if (seen.empty()) refused = v.name();
      seen.emplace(v.name(), t);
    };
    run.keep = [&](const ir::Value& v, const ir::Tensor&) { return v.name() != refused; };
    run.kept = &kept;
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> outputs, exec->Run(tc.inputs, run));
    ASSERT_GT(kept.size(), 15u);
    for (const NamedTensor& out : outputs) {
      EXPECT_EQ(kept.count(out.name), 0u) << out.name;
      seen.erase(out.name);
    }
    ASSERT_EQ(seen.erase(refused), 1u);
    EXPECT_EQ(kept.count(refused), 0u) << refused;
    EXPECT_EQ(kept.size(), seen.size());
    for (const auto& [name, want] : seen) {
      auto got = kept.find(name);
      ASSERT_NE(got, kept.end()) << "round " << round << ": " << name << " not kept";
      EXPECT_TRUE(got->second.BitwiseEqual(want)) << "round " << round << ": " << name;
      EXPECT_EQ(got->second.dims(), want.dims()) << name;
    }
  }
}

// A shape-arithmetic value that later runs take from the memo is kept as well (a copy: the memo
// keeps its own).
TEST(ExecutorKeepTest, MemoizedShapeValuesAreKept) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, kElements / 2});
  ir::Value* shape = b.Op("Shape", {x}, "shape", {2});
  shape->mutable_type().dtype = ir::DataType::kInt64;
  ir::Value* same = b.Op("Identity", {shape}, "same", {2});  // shape-only: memoized
  same->mutable_type().dtype = ir::DataType::kInt64;
  b.Output(b.Op("Reshape", {x, same}, "y", {2, kElements / 2}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(b.graph()));
  ASSERT_EQ(exec->shape_arithmetic_nodes(), 1);
  ir::Tensor input = Ramp(0.f);
  QFUSE_ASSERT_OK(input.SetDims({2, kElements / 2}));
  for (int round = 0; round < 3; ++round) {
    std::map<std::string, ir::Tensor> kept;
    RunOptions run;
    run.keep = [](const ir::Value&, const ir::Tensor&) { return true; };
    run.kept = &kept;
    QFUSE_ASSERT_OK(exec->Run({{"x", input}}, run).status());
    ASSERT_EQ(kept.size(), 2u) << "round " << round;
    for (const char* name : {"shape", "same"}) {
      ASSERT_EQ(kept.count(name), 1u) << "round " << round << ": " << name;
      EXPECT_TRUE(kept.at(name).BitwiseEqual(ir::Tensor::FromVector<int64_t>({2}, {2, kElements / 2}))) << name;
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime
