// OpenTensorDataset: in-memory samples stacked into batches (values checked by hand), with
// and without a leading batch dim of 1, the sample limit, fixed batch dims, and each error
// naming the sample index and the input.
#include "data/tensor_dataset.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/data/dataset_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::data {
namespace {

using ::qfuse::testing::InputsOnlyGraph;
using ir::NamedTensor;

constexpr int64_t kBatch = -1;  // symbolic batch dim in InputSpec

NamedTensor Floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  return {name, ir::Tensor::FromVector<float>(std::move(dims), values)};
}

std::shared_ptr<const TensorSamples> Samples(TensorSamples samples) {
  return std::make_shared<const TensorSamples>(std::move(samples));
}

std::string OpenError(TensorSamples samples, const ir::Graph& graph, int64_t max_samples = 0) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = OpenTensorDataset(Samples(std::move(samples)), graph, max_samples);
  EXPECT_FALSE(ds.ok());
  return ds.ok() ? "" : std::string(ds.status().message());
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

TEST(TensorDatasetTest, StacksTwoInputsInModelOrder) {
  auto graph = InputsOnlyGraph({{"a", ir::DataType::kFloat32, {kBatch, 2}}, {"b", ir::DataType::kFloat32, {kBatch, 1, 3}}});
  // Sample 0 lists b before a; sample 1 gives a with a batch dim of 1 and b without.
  TensorSamples samples = {
      {Floats("b", {1, 3}, {10, 11, 12}), Floats("a", {2}, {1, 2})},
      {Floats("a", {1, 2}, {3, 4}), Floats("b", {1, 1, 3}, {13, 14, 15})},
      {Floats("a", {2}, {5, 6}), Floats("b", {1, 3}, {16, 17, 18})},
  };
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenTensorDataset(Samples(samples), *graph, 0));
  EXPECT_EQ(ds->size(), 3);
  EXPECT_EQ(ds->fixed_batch(), 0);
  EXPECT_EQ(ds->DescribeSample(2), "in-memory sample 2");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> batch, ds->ReadBatch(1, 2));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].name, "a");
  EXPECT_EQ(batch[0].tensor.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(std::vector<float>(batch[0].tensor.values<float>().begin(), batch[0].tensor.values<float>().end()),
            (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(batch[1].name, "b");
  EXPECT_EQ(batch[1].tensor.dims(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(std::vector<float>(batch[1].tensor.values<float>().begin(), batch[1].tensor.values<float>().end()),
            (std::vector<float>{13, 14, 15, 16, 17, 18}));
  EXPECT_FALSE(ds->ReadBatch(2, 2).ok());  // past the end
  EXPECT_FALSE(ds->ReadBatch(-1, 1).ok());
}

TEST(TensorDatasetTest, SampleLimitChecksOnlyTheFirstSamples) {
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 1}}});
  // Sample 2 is malformed, but a limit of 2 never reads it.
  TensorSamples samples = {{Floats("x", {1}, {7})}, {Floats("x", {1}, {8})}, {Floats("x", {3}, {0, 0, 0})}};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenTensorDataset(Samples(samples), *graph, 2));
  EXPECT_EQ(ds->size(), 2);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> batch, ds->ReadBatch(0, 2));
  EXPECT_EQ(batch[0].tensor.values<float>()[0], 7.f);
  EXPECT_EQ(batch[0].tensor.values<float>()[1], 8.f);
  EXPECT_CONTAINS(OpenError(samples, *graph), "calibration sample 2, input 'x' FLOAT[batch,1]");
  EXPECT_EQ(OpenTensorDataset(Samples(samples), *graph, 10).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorDatasetTest, SymbolicDimsComeFromSampleZero) {
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, kBatch}}});
  TensorSamples same = {{Floats("x", {3}, {1, 2, 3})}, {Floats("x", {1, 3}, {4, 5, 6})}};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenTensorDataset(Samples(same), *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> batch, ds->ReadBatch(0, 2));
  EXPECT_EQ(batch[0].tensor.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(batch[0].tensor.values<float>()[3], 4.f);
  TensorSamples differ = {{Floats("x", {3}, {1, 2, 3})}, {Floats("x", {2}, {4, 5})}};
  const std::string message = OpenError(differ, *graph);
  EXPECT_CONTAINS(message, "calibration sample 1, input 'x'");
  EXPECT_CONTAINS(message, "expected a sample shaped [3] (as sample 0)");
  EXPECT_CONTAINS(message, "got [2]");
}

TEST(TensorDatasetTest, FixedBatchDim) {
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {1, 2}}});
  TensorSamples samples = {{Floats("x", {1, 2}, {1, 2})}, {Floats("x", {2}, {3, 4})}};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenTensorDataset(Samples(samples), *graph, 0));
  EXPECT_EQ(ds->fixed_batch(), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> batch, ds->ReadBatch(1, 1));
  EXPECT_EQ(batch[0].tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(batch[0].tensor.values<float>()[1], 4.f);
  EXPECT_FALSE(ds->ReadBatch(0, 2).ok());
}

TEST(TensorDatasetTest, ShapeErrorsNameSampleAndInput) {
  auto graph = InputsOnlyGraph({{"input", ir::DataType::kFloat32, {kBatch, 1, 2, 2}}});
  TensorSamples samples = {{Floats("input", {1, 2, 2}, {0, 0, 0, 0})},
                           {Floats("input", {1, 1, 2, 2}, {0, 0, 0, 0})},
                           {Floats("input", {2, 2}, {0, 0, 0, 0})}};  // right count, wrong rank
  std::string message = OpenError(samples, *graph);
  EXPECT_CONTAINS(message, "calibration sample 2, input 'input' FLOAT[batch,1,2,2]");
  EXPECT_CONTAINS(message, "got [2,2]");
  // A leading dim other than 1 is not a batch dim to strip.
  message = OpenError({{Floats("input", {2, 1, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0})}}, *graph);
  EXPECT_CONTAINS(message, "calibration sample 0, input 'input'");
  EXPECT_CONTAINS(message, "[batch,1,2,2] without its batch dim, or with a batch dim of 1, got [2,1,2,2]");
}

TEST(TensorDatasetTest, DtypeAndNameErrors) {
  auto graph = InputsOnlyGraph({{"a", ir::DataType::kFloat32, {kBatch, 1}}, {"b", ir::DataType::kFloat32, {kBatch, 1}}});
  NamedTensor ints{"b", ir::Tensor::FromVector<int64_t>({1}, std::vector<int64_t>{1})};
  std::string message = OpenError({{Floats("a", {1}, {1}), Floats("b", {1}, {2})}, {Floats("a", {1}, {1}), ints}}, *graph);
  EXPECT_CONTAINS(message, "calibration sample 1, input 'b' FLOAT[batch,1]: expected FLOAT data, got INT64");
  message = OpenError({{Floats("a", {1}, {1})}}, *graph);
  EXPECT_CONTAINS(message, "calibration sample 0, input 'b' FLOAT[batch,1]: missing from the sample");
  message = OpenError({{Floats("a", {1}, {1}), Floats("b", {1}, {2}), Floats("c", {1}, {3})}}, *graph);
  EXPECT_CONTAINS(message, "calibration sample 0: 'c' is not a model input (inputs: a, b)");
  message = OpenError({{Floats("a", {1}, {1}), Floats("a", {1}, {2})}}, *graph);
  EXPECT_CONTAINS(message, "calibration sample 0: input 'a' is given twice");
  EXPECT_CONTAINS(OpenError({}, *graph), "no calibration samples");
  EXPECT_FALSE(OpenTensorDataset(nullptr, *graph, 0).ok());
}

}  // namespace
}  // namespace qfuse::data
