// The executor's memo of shape arithmetic: a node computed only from Shape outputs and
// constants is skipped when its inputs equal the last Run's, and runs again when a shape
// changes. Checked by counting the Gather kernel's runs (a registry whose Gather counts) and
// by the outputs, which must be the input reshaped by its own batch size on every run.
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "runtime/executor.h"
#include "runtime/kernel_registry.h"
#include "tests/testing/graph_builder.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::runtime {
namespace {

using ::qfuse::testing::GraphBuilder;

std::atomic<int> gather_runs{0};

// The default Gather kernel, counting its runs.
class CountingKernel : public Kernel {
 public:
  explicit CountingKernel(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    ++gather_runs;
    return inner_->Run(ctx, inputs, outputs);
  }

 private:
  std::unique_ptr<Kernel> inner_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeCountingGather(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> inner, DefaultKernelRegistry().Find("Gather")(node));
  return std::unique_ptr<Kernel>(new CountingKernel(std::move(inner)));
}

// x [n, m] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [3, -1])) -> Relu -> y [n, 3, m / 3].
class ShapeMemoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ir::Value* x = b_.Input("x", {-1, -1});
    ir::Value* shape = b_.Op("Shape", {x}, "shape", {2});
    ir::Value* n =
        b_.Op("Gather", {shape, b_.Ints("zero", {0})}, "n", {1}, GraphBuilder::Attrs({{"axis", int64_t{0}}}));
    ir::Value* target =
        b_.Op("Concat", {n, b_.Ints("rest", {3, -1})}, "target", {3}, GraphBuilder::Attrs({{"axis", int64_t{0}}}));
    for (ir::Value* v : {shape, n, target}) v->mutable_type().dtype = ir::DataType::kInt64;
    ir::Value* r = b_.Op("Reshape", {x, target}, "r");
    b_.Output(b_.Op("Relu", {r}, "y"));
    registry_ = DefaultKernelRegistry();
    registry_.Register("Gather", &MakeCountingGather);
    ExecutorOptions options;
    options.registry = &registry_;
    QFUSE_ASSERT_OK_AND_ASSIGN(exec_, Executor::Create(b_.graph(), options));
    gather_runs = 0;
  }

  // Runs on x [n, m] with values k - 7 (k the flat index) and checks y.
  void RunAndCheck(int64_t n, int64_t m) {
    std::vector<float> v(static_cast<size_t>(n * m));
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k) - 7.f;
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> out, exec_->Run({{"x", Tensor::FromVector<float>({n, m}, v)}}));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{n, 3, m / 3}));
    absl::Span<const float> y = out[0].tensor.values<float>();
    ASSERT_EQ(y.size(), v.size());
    for (size_t k = 0; k < v.size(); ++k) ASSERT_EQ(y[k], v[k] > 0 ? v[k] : 0.f) << k;
  }

  GraphBuilder b_;
  KernelRegistry registry_;
  std::unique_ptr<Executor> exec_;
};

TEST_F(ShapeMemoTest, SkipsShapeArithmeticWhileShapesStay) {
  EXPECT_EQ(exec_->shape_arithmetic_nodes(), 2);  // Gather and Concat; Shape always runs
  RunAndCheck(2, 6);
  EXPECT_EQ(gather_runs, 1);
  RunAndCheck(2, 6);
  RunAndCheck(2, 9);  // Shape changes, Gather's result does not: Gather runs (Concat then need not)
  EXPECT_EQ(gather_runs, 2);
  RunAndCheck(5, 9);
  EXPECT_EQ(gather_runs, 3);
  RunAndCheck(2, 6);
  RunAndCheck(2, 6);
  EXPECT_EQ(gather_runs, 4);
}

TEST_F(ShapeMemoTest, SwitchedOffRunsEveryNode) {
  ExecutorOptions options;
  options.registry = &registry_;
  options.memoize_shape_arithmetic = false;
  QFUSE_ASSERT_OK_AND_ASSIGN(exec_, Executor::Create(b_.graph(), options));
  for (int k = 0; k < 3; ++k) RunAndCheck(2, 6);
  EXPECT_EQ(gather_runs, 3);
}

// A run that fails inside the shape arithmetic (after Shape kept its new value, before the
// nodes after it did) must not leave a memo that a later run with the same shape takes as
// valid: x [n, m] -> ConstantOfShape(Gather(Shape(x), [1]) - [7]) fails for m < 7, every time.
TEST(ShapeMemoFailureTest, FailureInsideTheChainFailsAgain) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {-1, -1});
  ir::Value* shape = b.Op("Shape", {x}, "shape", {2});
  ir::Value* m = b.Op("Gather", {shape, b.Ints("one", {1})}, "m", {1}, GraphBuilder::Attrs({{"axis", int64_t{0}}}));
  ir::Value* d = b.Op("Sub", {m, b.Ints("seven", {7})}, "d", {1});
  for (ir::Value* v : {shape, m, d}) v->mutable_type().dtype = ir::DataType::kInt64;
  b.Output(b.Op("ConstantOfShape", {d}, "zeros"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> exec, Executor::Create(b.graph()));
  auto run = [&](int64_t n, int64_t cols) {
    return exec->Run({{"x", Tensor::FromVector<float>({n, cols}, std::vector<float>(n * cols, 1.f))}});
  };
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> out, run(2, 9));
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{2}));
  EXPECT_FALSE(run(2, 6).ok());
  EXPECT_FALSE(run(2, 6).ok()) << "a second run with the failing shape took the memo of the first";
  QFUSE_ASSERT_OK_AND_ASSIGN(out, run(3, 10));
  EXPECT_EQ(out[0].tensor.dims(), (std::vector<int64_t>{3}));
}

// Two Runs at once: one uses the memo, the other computes everything; both are right.
TEST_F(ShapeMemoTest, ConcurrentRunsGiveTheSameOutputs) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int k = 0; k < 20; ++k) RunAndCheck(1 + (t + k) % 3, 6);
    });
  }
  for (std::thread& th : threads) th.join();
}

}  // namespace
}  // namespace qfuse::runtime
