// SaturatingReaderBounds (ir/reader_saturation.h): the constants against the functions'
// definitions; each rule on hand-picked nodes; and, run on the runtime, a graph whose readers
// give the same outputs (Clip, HardSigmoid, through moves and max pools) or outputs within
// 2^-10 (Sigmoid, Tanh) when the bounded values are clipped to [-B, B] first.
#include "ir/reader_saturation.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::ir {
namespace {

using testing::GraphBuilder;

TEST(ReaderSaturationTest, SigmoidAndTanhBoundsLeaveATenBitTail) {
  const double sigmoid_tail = 1.0 - 1.0 / (1.0 + std::exp(-double{kSigmoidSaturation}));
  EXPECT_NEAR(sigmoid_tail, std::ldexp(1.0, -10), 1e-9);  // output range 1
  const double tanh_tail = 1.0 - std::tanh(double{kTanhSaturation});
  EXPECT_NEAR(tanh_tail, std::ldexp(1.0, -9), 2e-9);  // output range 2
}

TEST(ReaderSaturationTest, EachRuleOnItsOwnNode) {
  GraphBuilder b;
  Value* x = b.Input("x", {1, 2, 4, 4});
  auto source = [&](const std::string& name) { return b.Op("Neg", {x}, name, {1, 2, 4, 4}); };
  Value* to_sigmoid = source("to_sigmoid");
  b.Output(b.Op("Sigmoid", {to_sigmoid}, "sigmoid"));
  Value* to_tanh = source("to_tanh");
  b.Output(b.Op("Tanh", {to_tanh}, "tanh"));
  Value* to_hard_sigmoid = source("to_hard_sigmoid");
  b.Output(b.Op("HardSigmoid", {to_hard_sigmoid}, "hard_sigmoid", {},
                GraphBuilder::Attrs({{"alpha", 0.25f}, {"beta", 0.25f}})));  // 0 at -1, 1 at 3
  Value* to_relu6 = source("to_relu6");
  b.Output(b.Op("Clip", {to_relu6, b.Floats("zero", {}, {0.f}), b.Floats("six", {}, {6.f})}, "relu6"));
  Value* to_clip = source("to_clip");
  b.Output(b.Op("Clip", {to_clip, b.Floats("minus_eight", {}, {-8.f}), b.Floats("two", {}, {2.f})}, "clip"));
  Value* to_half_clip = source("to_half_clip");  // no upper bound
  b.Output(b.Op("Clip", {to_half_clip, b.Floats("zero2", {}, {0.f})}, "half_clip"));
  Value* to_relu = source("to_relu");
  b.Output(b.Op("Relu", {to_relu}, "relu"));
  Value* shown = source("shown");  // a graph output itself
  b.Output(b.Op("Sigmoid", {shown}, "shown_sigmoid"));
  b.Output(shown);
  Value* also_multiplied = source("also_multiplied");  // SiLU: x * Sigmoid(x)
  Value* gate = b.Op("Sigmoid", {also_multiplied}, "gate");
  b.Output(b.Op("Mul", {also_multiplied, gate}, "silu"));
  Value* two_readers = source("two_readers");  // the larger bound wins
  b.Output(b.Op("Sigmoid", {two_readers}, "two_sigmoid"));
  b.Output(b.Op("Tanh", {two_readers}, "two_tanh"));
  Value* shaped = source("shaped");  // Shape reads no element
  b.Output(b.Op("Shape", {shaped}, "shape"));
  b.Output(b.Op("Tanh", {shaped}, "shaped_tanh"));
  Value* moved = source("moved");  // Transpose -> Reshape -> MaxPool -> linear Resize -> Sigmoid
  Value* transposed =
      b.Op("Transpose", {moved}, "transposed", {}, GraphBuilder::Attrs({{"perm", std::vector<int64_t>{0, 1, 3, 2}}}));
  Value* reshaped = b.Op("Reshape", {transposed, b.Ints("same_shape", {1, 2, 4, 4})}, "reshaped");
  Value* pooled =
      b.Op("MaxPool", {reshaped}, "pooled", {}, GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  Value* resized = b.Op("Resize", {pooled}, "resized", {}, GraphBuilder::Attrs({{"mode", std::string("linear")}}));
  b.Output(b.Op("Sigmoid", {resized}, "moved_sigmoid"));
  Value* to_cubic = source("to_cubic");  // cubic interpolation overshoots
  Value* cubic = b.Op("Resize", {to_cubic}, "cubic", {}, GraphBuilder::Attrs({{"mode", std::string("cubic")}}));
  b.Output(b.Op("Sigmoid", {cubic}, "cubic_sigmoid"));
  Value* concat_a = source("concat_a");  // Concat: every input's elements reach the reader
  Value* concat_b = source("concat_b");
  Value* joined = b.Op("Concat", {concat_a, concat_b}, "joined", {}, GraphBuilder::Attrs({{"axis", int64_t{1}}}));
  b.Output(b.Op("Tanh", {joined}, "joined_tanh"));
  Value* to_cast = source("to_cast");  // a Cast to its own type copies; one to float16 rounds
  Value* cast = b.Op("Cast", {to_cast}, "cast", {}, GraphBuilder::Attrs({{"to", int64_t{1}}}));
  b.Output(b.Op("Sigmoid", {cast}, "cast_sigmoid"));
  Value* to_half = source("to_half");
  Value* half = b.Op("Cast", {to_half}, "half", {}, GraphBuilder::Attrs({{"to", int64_t{10}}}));
  b.Output(b.Op("Sigmoid", {half}, "half_sigmoid"));
  Value* to_indexed = source("to_indexed");  // MaxPool's Indices, a graph output, see every value
  Node* indexed_pool = *b.graph().AddNode("MaxPool", "indexed_pool", {to_indexed}, {"indexed_max", "indices"},
                                          GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  indexed_pool->output(0)->mutable_type().dtype = DataType::kFloat32;
  indexed_pool->output(1)->mutable_type().dtype = DataType::kInt64;
  b.Output(b.Op("Sigmoid", {indexed_pool->output(0)}, "indexed_sigmoid"));
  b.Output(indexed_pool->output(1));
  Value* to_nan_clip = source("to_nan_clip");  // a NaN bound clamps nothing
  b.Output(
      b.Op("Clip", {to_nan_clip, b.Floats("minus_one", {}, {-1.f}), b.Floats("nan", {}, {std::nanf("")})}, "nan_clip"));
  Value* to_average = source("to_average");  // an average pool is not a move
  Value* averaged = b.Op("GlobalAveragePool", {to_average}, "averaged");
  b.Output(b.Op("Sigmoid", {averaged}, "averaged_sigmoid"));

  QFUSE_ASSERT_OK_AND_ASSIGN(ReaderBounds bounds, SaturatingReaderBounds(b.graph()));
  auto expect_bound = [&](Value* v, float magnitude, const std::string& reader) {
    auto it = bounds.find(v);
    ASSERT_NE(it, bounds.end()) << v->name();
    EXPECT_FLOAT_EQ(it->second.magnitude, magnitude) << v->name();
    EXPECT_EQ(it->second.reader, reader) << v->name();
  };
  expect_bound(to_sigmoid, kSigmoidSaturation, "Sigmoid");
  expect_bound(to_tanh, kTanhSaturation, "Tanh");
  expect_bound(to_hard_sigmoid, 3.f, "HardSigmoid");
  expect_bound(to_relu6, 6.f, "Clip");
  expect_bound(to_clip, 8.f, "Clip");
  expect_bound(two_readers, kSigmoidSaturation, "Sigmoid");
  expect_bound(shaped, kTanhSaturation, "Tanh");
  for (Value* v : {moved, transposed, reshaped, pooled, resized}) expect_bound(v, kSigmoidSaturation, "Sigmoid");
  for (Value* v : {concat_a, concat_b, joined}) expect_bound(v, kTanhSaturation, "Tanh");
  expect_bound(to_cast, kSigmoidSaturation, "Sigmoid");
  for (Value* v : {cubic, averaged}) expect_bound(v, kSigmoidSaturation, "Sigmoid");  // read by the Sigmoid itself
  expect_bound(indexed_pool->output(0), kSigmoidSaturation, "Sigmoid");
  for (Value* v :
       {x, to_half_clip, to_relu, shown, also_multiplied, to_cubic, to_half, to_indexed, to_nan_clip, to_average}) {
    EXPECT_FALSE(bounds.contains(v)) << v->name();
  }
}

// The readers of the test below: v_i = x * (1 + i / 10), read by op i.
const char* const kReaderOps[] = {"Sigmoid", "Tanh", "HardSigmoid", "Relu6", "MovedClip"};

// Builds v_i -> reader i for every reader; with `clip_at`, v_i is clipped to [-clip_at[i],
// clip_at[i]] before its reader.
void BuildReaders(GraphBuilder& b, const std::vector<float>* clip_at) {
  Value* x = b.Input("x", {2, 3, 8, 8});
  for (size_t i = 0; i < std::size(kReaderOps); ++i) {
    const std::string id = std::to_string(i);
    const std::string op = kReaderOps[i];
    Value* read = b.Op("Mul", {x, b.Floats("gain" + id, {}, {1.f + 0.1f * i})}, "v" + id);
    if (clip_at != nullptr) {
      const float bound = (*clip_at)[i];
      read =
          b.Op("Clip", {read, b.Floats("blo" + id, {}, {-bound}), b.Floats("bhi" + id, {}, {bound})}, "bounded" + id);
    }
    if (op == "Sigmoid" || op == "Tanh") {
      b.Output(b.Op(op, {read}, "out" + id));
    } else if (op == "HardSigmoid") {
      b.Output(b.Op(op, {read}, "out" + id, {}, GraphBuilder::Attrs({{"alpha", 0.2f}, {"beta", 0.5f}})));
    } else if (op == "Relu6") {
      b.Output(b.Op("Clip", {read, b.Floats("lo" + id, {}, {0.f}), b.Floats("hi" + id, {}, {6.f})}, "out" + id));
    } else {  // Transpose -> MaxPool -> Concat -> Clip(-3, 1)
      Value* t =
          b.Op("Transpose", {read}, "t" + id, {}, GraphBuilder::Attrs({{"perm", std::vector<int64_t>{0, 1, 3, 2}}}));
      Value* p =
          b.Op("MaxPool", {t}, "p" + id, {}, GraphBuilder::Attrs({{"kernel_shape", std::vector<int64_t>{2, 2}}}));
      Value* c = b.Op("Concat", {p, p}, "c" + id, {}, GraphBuilder::Attrs({{"axis", int64_t{1}}}));
      b.Output(b.Op("Clip", {c, b.Floats("lo" + id, {}, {-3.f}), b.Floats("hi" + id, {}, {1.f})}, "out" + id));
    }
  }
}

std::vector<Tensor> RunOn(const Graph& graph, const Tensor& input) {
  std::vector<Tensor> tensors;
  absl::StatusOr<std::unique_ptr<runtime::Executor>> exec =
      runtime::Executor::Create(graph, runtime::ExecutorOptions());
  EXPECT_TRUE(exec.ok()) << exec.status();
  if (!exec.ok()) return tensors;
  absl::StatusOr<std::vector<NamedTensor>> outputs = (*exec)->Run({{"x", input}}, runtime::RunOptions());
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  if (!outputs.ok()) return tensors;
  for (NamedTensor& t : *outputs) tensors.push_back(std::move(t.tensor));
  return tensors;
}

// The graph runs as built and with every v_i clipped to its bound first, on inputs in [-40, 40]
// with a dense ramp over [-12, 12]: Clip and HardSigmoid readers (directly, or through
// Transpose, MaxPool and Concat) give the same outputs, Sigmoid and Tanh outputs within 2^-10
// of their output range. Clipped 20% below the bound, every reader's output moves by more.
TEST(ReaderSaturationTest, ClippingAtTheBoundKeepsTheReadersOutputs) {
  GraphBuilder plain;
  BuildReaders(plain, nullptr);
  QFUSE_ASSERT_OK_AND_ASSIGN(ReaderBounds bounds, SaturatingReaderBounds(plain.graph()));
  std::vector<float> magnitudes;
  for (size_t i = 0; i < std::size(kReaderOps); ++i) {
    const Value* v = plain.graph().FindValue("v" + std::to_string(i));
    ASSERT_NE(v, nullptr);
    auto it = bounds.find(v);
    ASSERT_NE(it, bounds.end()) << kReaderOps[i];
    magnitudes.push_back(it->second.magnitude);
  }
  const float tolerances[] = {1.f / 1024, 2.f / 1024, 0.f, 0.f, 0.f};
  Tensor input(DataType::kFloat32, {2, 3, 8, 8});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-40.f, 40.f);
  absl::Span<float> values = input.mutable_values<float>();
  for (float& value : values) value = u(rng);
  for (int k = 0; k < 3 * 64; ++k) values[k] = -12.f + 24.f * k / (3 * 64 - 1);
  const std::vector<Tensor> want = RunOn(plain.graph(), input);
  ASSERT_EQ(want.size(), std::size(kReaderOps));
  for (const float shrink : {1.f, 0.8f}) {
    std::vector<float> clip_at;
    for (float m : magnitudes) clip_at.push_back(m * shrink);
    GraphBuilder clipped;
    BuildReaders(clipped, &clip_at);
    const std::vector<Tensor> got = RunOn(clipped.graph(), input);
    ASSERT_EQ(got.size(), std::size(kReaderOps));
    for (size_t i = 0; i < std::size(kReaderOps); ++i) {
      float worst = 0.f;
      for (int64_t k = 0; k < want[i].num_elements(); ++k) {
        worst = std::max(worst, std::abs(want[i].values<float>()[k] - got[i].values<float>()[k]));
      }
      if (shrink == 1.f) {
        EXPECT_LE(worst, tolerances[i]) << kReaderOps[i];
      } else {
        EXPECT_GT(worst, tolerances[i]) << kReaderOps[i] << " clipped at " << shrink << " of its bound";
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::ir
