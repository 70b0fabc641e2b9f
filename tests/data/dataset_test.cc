// OpenDataset / ParseDataSources over every format: the real Fashion-MNIST files (checked
// against the bundled models' own test vectors), generated IDX/npy/pb/raw/image fixtures,
// multi-input mapping by name, the sample limit, and each error path.
#include "data/dataset.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "base/file_util.h"
#include "data/dataset_sources.h"
#include "gtest/gtest.h"
#include "ir/onnx_import.h"
#include "ir/tensor_proto.h"
#include "runtime/executor.h"
#include "tests/data/dataset_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::data {
namespace {

namespace fs = std::filesystem;
using ::qfuse::testing::AsBytes;
using ::qfuse::testing::FreshDir;
using ::qfuse::testing::IdxBytes;
using ::qfuse::testing::InputsOnlyGraph;
using ::qfuse::testing::InputSpec;
using ::qfuse::testing::NpyBytes;
using ::qfuse::testing::WriteBytes;
using ::qfuse::testing::WriteJpeg;
using ::qfuse::testing::WritePng;

constexpr int64_t kBatch = -1;  // symbolic batch dim in InputSpec

std::string FashionMnist(const std::string& file) {
  const char* env = std::getenv("QFUSE_FASHION_MNIST");
  return std::string(env != nullptr ? env : "/usr/share/datasets/fashion-mnist") + "/" + file;
}

DataSource Source(const std::string& path, const std::string& input = "") {
  DataSource s;
  s.input_name = input;
  s.path = path;
  return s;
}

std::unique_ptr<ir::Graph> MnistGraph() { return InputsOnlyGraph({{"input", ir::DataType::kFloat32, {kBatch, 1, 28, 28}}}); }

// The error message of a failed OpenDataset, checked to be one line.
std::string OpenError(const std::vector<DataSource>& sources, const ir::Graph& graph, int64_t max_samples = 0) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = OpenDataset(sources, graph, max_samples);
  EXPECT_FALSE(ds.ok());
  if (ds.ok()) return "";
  const std::string message(ds.status().message());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  return message;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

TEST(DatasetTest, FashionMnistIdx) {
  const std::string path = FashionMnist("t10k-images-idx3-ubyte.gz");
  ASSERT_TRUE(fs::exists(path)) << path << " missing: run tools/setup.sh";
  auto graph = MnistGraph();
  const auto start = std::chrono::steady_clock::now();
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({Source(path)}, *graph, 512));
  EXPECT_EQ(ds->size(), 512);
  EXPECT_EQ(ds->fixed_batch(), 0);
  double sum0 = 0;
  for (int64_t b = 0; b < 512; b += 32) {
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, ds->ReadBatch(b, 32));
    ASSERT_EQ(batch.size(), 1u);
    EXPECT_EQ(batch[0].name, "input");
    ASSERT_EQ(batch[0].tensor.dtype(), ir::DataType::kFloat32);
    EXPECT_EQ(batch[0].tensor.dims(), (std::vector<int64_t>{32, 1, 28, 28}));
    if (b == 0) {
      for (int i = 0; i < 784; ++i) sum0 += batch[0].tensor.data<float>()[i];
      EXPECT_EQ(batch[0].tensor.data<float>()[14 * 28 + 14], 110.f / 255.f);  // exactly pixel / 255
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_NEAR(sum0, 33456.0 / 255.0, 1e-3);
  EXPECT_EQ(ds->DescribeSample(17), path + " sample 17");

  // Full dataset, odd batch at the end.
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> all, OpenDataset({Source(path)}, *graph, 0));
  EXPECT_EQ(all->size(), 10000);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> last, all->ReadBatch(9990, 10));
  EXPECT_EQ(last[0].tensor.dims()[0], 10);
}

// The bundled models' test vectors are the first t10k images / 255 in the ONNX test-data
// layout: reading them as a .pb folder and the IDX file must agree bit for bit.
TEST(DatasetTest, TensorProtoFolderMatchesIdx) {
  const std::string idx = FashionMnist("t10k-images-idx3-ubyte.gz");
  ASSERT_TRUE(fs::exists(idx)) << idx << " missing: run tools/setup.sh";
  auto graph = MnistGraph();
  const std::string folder = "models/resnet_small/test_data_set_0";  // input_0.pb and output_0.pb
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> pb, OpenDataset({Source(folder)}, *graph, 0));
  const int64_t n = pb->size();
  ASSERT_GT(n, 10);
  EXPECT_EQ(pb->DescribeSample(3), folder + "/input_0.pb sample 3");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> images, OpenDataset({Source(idx)}, *graph, n));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> a, pb->ReadBatch(0, n));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> b, images->ReadBatch(0, n));
  EXPECT_TRUE(a[0].tensor.BitwiseEqual(b[0].tensor));
  // The parent folder (test_data_set_* sub-folders) reads the same samples.
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> sets, OpenDataset({Source("models/resnet_small")}, *graph, 0));
  EXPECT_EQ(sets->size(), n);
}

// End to end: the dataset feeds the bundled model through the executor and the
// predictions match the labels about as often as accuracy.txt says (0.92 on all 10000).
TEST(DatasetTest, FeedsTheSampleModel) {
  const std::string images = FashionMnist("t10k-images-idx3-ubyte.gz");
  ASSERT_TRUE(fs::exists(images)) << images << " missing: run tools/setup.sh";
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Model model, ir::LoadModel("models/resnet_small/model.onnx"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> labels, ReadIdxLabels(FashionMnist("t10k-labels-idx1-ubyte.gz")));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<DataSource> sources, ParseDataSources({"input:" + images}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset(sources, *model.graph, 256));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<runtime::Executor> exec, runtime::Executor::Create(*model.graph));
  int64_t correct = 0;
  for (int64_t start = 0; start < ds->size(); start += 64) {
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, ds->ReadBatch(start, 64));
    QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> out, exec->Run(batch));
    const ir::Tensor& logits = out[0].tensor;
    ASSERT_EQ(logits.dims(), (std::vector<int64_t>{64, 10}));
    for (int64_t i = 0; i < 64; ++i) {
      const float* row = logits.data<float>() + i * 10;
      correct += (std::max_element(row, row + 10) - row) == labels[start + i];
    }
  }
  EXPECT_GT(correct, 0.85 * 256) << correct << " of 256";
}

TEST(DatasetTest, GeneratedIdxFloatAndUint8Inputs) {
  const std::string dir = FreshDir("ds_idx");
  WriteBytes(dir + "/x-idx3-ubyte", IdxBytes(0x08, {3, 2, 2}, std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\xff", 12)));
  // FLOAT input [batch,4] from [2,2] samples, with a custom scale.
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 4}}});
  DataSource source = Source(dir + "/x-idx3-ubyte");
  source.idx_scale = 0.5f;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({source}, *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, ds->ReadBatch(1, 2));
  EXPECT_EQ(batch[0].tensor.dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(std::vector<float>(batch[0].tensor.values<float>().begin(), batch[0].tensor.values<float>().end()),
            (std::vector<float>{2, 2.5f, 3, 3.5f, 4, 4.5f, 5, 127.5f}));
  // UINT8 input: bytes unchanged.
  auto u8 = InputsOnlyGraph({{"x", ir::DataType::kUint8, {kBatch, 2, 2}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> raw, OpenDataset({source}, *u8, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> bytes, raw->ReadBatch(2, 1));
  ASSERT_EQ(bytes[0].tensor.dtype(), ir::DataType::kUint8);
  EXPECT_EQ(bytes[0].tensor.data<uint8_t>()[3], 255);
}

TEST(DatasetTest, NpyFloatAndUint8) {
  const std::string dir = FreshDir("ds_npy");
  WriteBytes(dir + "/f.npy", NpyBytes("<f4", false, {3, 1, 2}, AsBytes<float>({1, 2, 3, 4, 5, 6})));
  WriteBytes(dir + "/u.npy", NpyBytes("|u1", false, {3, 2}, std::string("\x00\xff\x33\x66\x99\xcc", 6)));
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 2}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> f, OpenDataset({Source(dir + "/f.npy")}, *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> fb, f->ReadBatch(0, 3));
  EXPECT_EQ(fb[0].tensor.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(fb[0].tensor.data<float>()[5], 6.f);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> u, OpenDataset({Source(dir + "/u.npy")}, *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> ub, u->ReadBatch(1, 2));
  EXPECT_EQ(ub[0].tensor.data<float>()[0], 0x33 / 255.f);
  EXPECT_EQ(ub[0].tensor.data<float>()[3], 0xcc / 255.f);
  EXPECT_EQ(u->DescribeSample(2), dir + "/u.npy sample 2");
}

// The default batch holds at most the given input bytes, summed over the inputs of one sample
// (uint8 files are read as float32: 4 bytes an element), at least one sample, at most max.
TEST(DatasetTest, BatchWithinInputBytes) {
  const auto Batch = [](Dataset& data, int64_t max_samples, int64_t max_bytes) {
    absl::StatusOr<int64_t> batch = BatchWithinInputBytes(data, max_samples, max_bytes);
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.value_or(-1);
  };
  const std::string dir = FreshDir("ds_batch_bytes");
  WriteBytes(dir + "/x.npy", NpyBytes("<f4", false, {3, 1000}, AsBytes<float>(std::vector<float>(3000, 1.f))));
  WriteBytes(dir + "/y.npy", NpyBytes("|u1", false, {3, 250}, std::string(750, '\x01')));
  auto one = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 1000}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> x, OpenDataset({Source(dir + "/x.npy")}, *one, 0));
  EXPECT_EQ(Batch(*x, 32, 10000), 2);  // 4000 bytes a sample
  EXPECT_EQ(Batch(*x, 32, 3999), 1);
  EXPECT_EQ(Batch(*x, 32, int64_t{1} << 30), 32);
  auto two = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 1000}}, {"y", ir::DataType::kFloat32, {kBatch, 250}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> xy,
                             OpenDataset({Source(dir + "/x.npy", "x"), Source(dir + "/y.npy", "y")}, *two, 0));
  EXPECT_EQ(Batch(*xy, 32, 10000), 2);  // 5000 bytes a sample
  EXPECT_EQ(Batch(*xy, 32, 9999), 1);
  EXPECT_EQ(Batch(*xy, 32, 15000), 3);
  // A model with a fixed batch dim takes that count, whatever the bytes.
  auto fixed = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {3, 1000}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> f, OpenDataset({Source(dir + "/x.npy")}, *fixed, 0));
  ASSERT_EQ(f->fixed_batch(), 3);
  EXPECT_EQ(Batch(*f, 32, 4000), 3);
}

TEST(DatasetTest, RawFloat32) {
  const std::string dir = FreshDir("ds_raw");
  WriteBytes(dir + "/x.raw", AsBytes<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 2, 2}}});
  DataSource source = Source(dir + "/x.raw");
  source.raw_shape = {4};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({source}, *graph, 0));
  EXPECT_EQ(ds->size(), 3);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> b, ds->ReadBatch(2, 1));
  EXPECT_EQ(b[0].tensor.dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(b[0].tensor.data<float>()[0], 9.f);

  source.raw_shape = {5};
  EXPECT_EQ(OpenError({source}, *graph),
            dir + "/x.raw: file size 48 bytes is not a multiple of the sample size 20 bytes (raw_shape [5] float32)");
  source.raw_shape = {};
  EXPECT_EQ(OpenError({source}, *graph), dir + "/x.raw: raw float32 data needs a per-sample shape (raw_shape)");
  WriteBytes(dir + "/empty.bin", "");
  source = Source(dir + "/empty.bin");
  source.raw_shape = {4};
  EXPECT_EQ(OpenError({source}, *graph), dir + "/empty.bin: no samples (empty file)");
}

TEST(DatasetTest, TensorProtoFilesSortedEachOneSampleOrABatch) {
  const std::string dir = FreshDir("ds_pb");
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 2}}});
  // Sorted by name: "a.pb" (a batch of 2: same rank as the input), "b.pb" (one sample).
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({1, 2}, std::vector<float>{5, 6}), "x", dir + "/b.pb"));
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({2, 2}, std::vector<float>{1, 2, 3, 4}), "x",
                                      dir + "/a.pb"));
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({2}, std::vector<float>{7, 8}), "x", dir + "/c.pb"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({Source(dir)}, *graph, 0));
  EXPECT_EQ(ds->size(), 4);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> b, ds->ReadBatch(0, 4));
  EXPECT_EQ(std::vector<float>(b[0].tensor.values<float>().begin(), b[0].tensor.values<float>().end()),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(ds->DescribeSample(1), dir + "/a.pb sample 1");
  EXPECT_EQ(ds->DescribeSample(2), dir + "/b.pb sample 0");
  EXPECT_EQ(ds->DescribeSample(3), dir + "/c.pb");
  // The limit stops inside the first file.
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> one, OpenDataset({Source(dir)}, *graph, 1));
  EXPECT_EQ(one->size(), 1);
  // A file rewritten after opening is caught, not read out of bounds.
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({1, 2}, std::vector<float>{1, 2}), "x", dir + "/a.pb"));
  absl::StatusOr<std::vector<ir::NamedTensor>> changed = ds->ReadBatch(1, 1);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().message(), "input 'x': " + dir + "/a.pb: changed while reading (now FLOAT[1,2])");
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({2, 2}, std::vector<float>{1, 2, 3, 4}), "x",
                                      dir + "/a.pb"));

  // A file of the wrong dtype names the file and the input.
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<int64_t>({2}, std::vector<int64_t>{1, 2}), "x", dir + "/d.pb"));
  EXPECT_EQ(OpenError({Source(dir)}, *graph), dir + "/d.pb: input 'x' FLOAT[batch,2] expects FLOAT data, got INT64 (pb)");
  fs::remove(dir + "/d.pb");
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({3}, std::vector<float>{1, 2, 3}), "x", dir + "/e.pb"));
  EXPECT_EQ(OpenError({Source(dir)}, *graph),
            dir + "/e.pb: input 'x' FLOAT[batch,2] expects samples of 2 elements [2], got 3 elements [3]");
  WriteBytes(dir + "/e.pb", "\xff\xff garbage");
  EXPECT_CONTAINS(OpenError({Source(dir)}, *graph), dir + "/e.pb");
}

TEST(DatasetTest, MultiInputByNameAndTestDataSets) {
  const std::string dir = FreshDir("ds_multi");
  WriteBytes(dir + "/a.npy", NpyBytes("<f4", false, {2, 2}, AsBytes<float>({1, 2, 3, 4})));
  WriteBytes(dir + "/b.npy", NpyBytes("<f4", false, {2, 3}, AsBytes<float>({10, 20, 30, 40, 50, 60})));
  WriteBytes(dir + "/b3.npy", NpyBytes("<f4", false, {3, 3}, AsBytes<float>({1, 1, 1, 2, 2, 2, 3, 3, 3})));
  auto graph = InputsOnlyGraph({{"a", ir::DataType::kFloat32, {kBatch, 2}}, {"b:0", ir::DataType::kFloat32, {kBatch, 3}}});
  // Given in the other order: matched by name, returned in graph-input order.
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<DataSource> sources,
                             ParseDataSources({"b:0:" + dir + "/b.npy", "a:" + dir + "/a.npy"}));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset(sources, *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, ds->ReadBatch(1, 1));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].name, "a");
  EXPECT_EQ(batch[0].tensor.data<float>()[1], 4.f);
  EXPECT_EQ(batch[1].name, "b:0");
  EXPECT_EQ(batch[1].tensor.data<float>()[2], 60.f);
  EXPECT_EQ(ds->DescribeSample(1), "a: " + dir + "/a.npy sample 1, b:0: " + dir + "/b.npy sample 1");

  // Different sample counts, unless the limit evens them out.
  EXPECT_EQ(OpenError({Source(dir + "/a.npy", "a"), Source(dir + "/b3.npy", "b:0")}, *graph),
            "calibration inputs have different sample counts: a: 2 (" + dir + "/a.npy), b:0: 3 (" + dir + "/b3.npy)");
  QFUSE_EXPECT_OK(OpenDataset({Source(dir + "/a.npy", "a"), Source(dir + "/b3.npy", "b:0")}, *graph, 2));
  // Mapping errors.
  EXPECT_EQ(OpenError({Source(dir + "/a.npy", "a"), Source(dir + "/b.npy", "c")}, *graph),
            "calibration data '" + dir + "/b.npy': the model has no input 'c' (inputs: a, b:0)");
  EXPECT_EQ(OpenError({Source(dir + "/a.npy", "a")}, *graph),
            "no calibration data for model input 'b:0' FLOAT[batch,3]");
  EXPECT_EQ(OpenError({Source(dir + "/a.npy")}, *graph),
            "calibration data '" + dir + "/a.npy' names no input but the model has 2 (a, b:0); use name:path");
  EXPECT_EQ(OpenError({Source(dir + "/a.npy", "a"), Source(dir + "/b.npy", "a")}, *graph),
            "two calibration data sources for input 'a': '" + dir + "/a.npy' and '" + dir + "/b.npy'");
  EXPECT_EQ(OpenError({}, *graph), "no calibration data given for the model's inputs (a, b:0)");

  // ONNX test-data sets: input_<k>.pb goes to the k-th input, output_*.pb is ignored.
  const std::string sets = FreshDir("ds_multi_sets");
  for (int s = 0; s < 2; ++s) {
    const std::string set = sets + "/test_data_set_" + std::to_string(s);
    fs::create_directories(set);
    QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({1, 2}, std::vector<float>{1.f + s, 2}), "a",
                                        set + "/input_0.pb"));
    QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({1, 3}, std::vector<float>{3, 4, 5.f + s}), "b:0",
                                        set + "/input_1.pb"));
    QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({1, 7}, std::vector<float>(7)), "y",
                                        set + "/output_0.pb"));
  }
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> pb,
                             OpenDataset({Source(sets, "a"), Source(sets + "/test_data_set_1", "b:0")}, *graph, 1));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> pbb, pb->ReadBatch(0, 1));
  EXPECT_EQ(pbb[0].tensor.data<float>()[0], 1.f);
  EXPECT_EQ(pbb[1].tensor.data<float>()[2], 6.f);
  EXPECT_EQ(pb->DescribeSample(0), "a: " + sets + "/test_data_set_0/input_0.pb sample 0, b:0: " + sets +
                                       "/test_data_set_1/input_1.pb sample 0");
}

TEST(DatasetTest, LimitAndBatchRange) {
  const std::string dir = FreshDir("ds_limit");
  WriteBytes(dir + "/x.npy", NpyBytes("<f4", false, {5, 1}, AsBytes<float>({0, 1, 2, 3, 4})));
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {kBatch, 1}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({Source(dir + "/x.npy")}, *graph, 3));
  EXPECT_EQ(ds->size(), 3);
  QFUSE_EXPECT_OK(ds->ReadBatch(1, 2));
  absl::StatusOr<std::vector<ir::NamedTensor>> past = ds->ReadBatch(2, 2);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(past.status().message(), "calibration samples [2, 4) are out of range: the dataset has 3");
  EXPECT_FALSE(ds->ReadBatch(-1, 1).ok());
  EXPECT_FALSE(ds->ReadBatch(0, 0).ok());
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> more, OpenDataset({Source(dir + "/x.npy")}, *graph, 100));
  EXPECT_EQ(more->size(), 5);
  EXPECT_EQ(OpenError({Source(dir + "/x.npy")}, *graph, -1), "max_samples must be >= 0, got -1");
}

TEST(DatasetTest, FixedBatchDim) {
  const std::string dir = FreshDir("ds_fixed");
  WriteBytes(dir + "/x.npy", NpyBytes("<f4", false, {3, 2}, AsBytes<float>({0, 1, 2, 3, 4, 5})));
  auto graph = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {1, 2}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({Source(dir + "/x.npy")}, *graph, 0));
  EXPECT_EQ(ds->fixed_batch(), 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> b, ds->ReadBatch(2, 1));
  EXPECT_EQ(b[0].tensor.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(b[0].tensor.data<float>()[1], 5.f);
  absl::StatusOr<std::vector<ir::NamedTensor>> two = ds->ReadBatch(0, 2);
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().message(), "the model's batch dim is fixed at 1; cannot read a batch of 2");
}

TEST(DatasetTest, SymbolicAndUnknownSampleDims) {
  const std::string dir = FreshDir("ds_symbolic");
  WriteBytes(dir + "/x.npy", NpyBytes("<f4", false, {2, 2, 3}, AsBytes<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})));
  // [batch, 2, w]: w taken from the samples.
  auto graph = std::make_unique<ir::Graph>();
  ir::TensorType type{ir::DataType::kFloat32, {true, {ir::Dim::Symbolic("n"), ir::Dim::Known(2), ir::Dim::Symbolic("w")}}, {}};
  ASSERT_TRUE(graph->AddInput("x", type).ok());
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({Source(dir + "/x.npy")}, *graph, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> b, ds->ReadBatch(0, 2));
  EXPECT_EQ(b[0].tensor.dims(), (std::vector<int64_t>{2, 2, 3}));
  // Unknown rank: the samples' own shape.
  auto unranked = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {}, /*rank_known=*/false}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> u, OpenDataset({Source(dir + "/x.npy")}, *unranked, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> ub, u->ReadBatch(1, 1));
  EXPECT_EQ(ub[0].tensor.dims(), (std::vector<int64_t>{1, 2, 3}));
  // Known dims must agree with the samples.
  auto wrong = std::make_unique<ir::Graph>();
  type.shape.dims[1] = ir::Dim::Known(3);
  ASSERT_TRUE(wrong->AddInput("x", type).ok());
  EXPECT_EQ(OpenError({Source(dir + "/x.npy")}, *wrong),
            dir + "/x.npy sample 0: input 'x' FLOAT[n,3,w] expects samples shaped like [n,3,w] without its batch dim, got [2,3]");
  // A scalar input has no batch dim.
  auto scalar = InputsOnlyGraph({{"x", ir::DataType::kFloat32, {}}});
  EXPECT_EQ(OpenError({Source(dir + "/x.npy")}, *scalar),
            "input 'x' FLOAT[] is a scalar: calibration data needs a leading batch dim");
}

TEST(DatasetTest, WrongElementCountOrDtype) {
  const std::string dir = FreshDir("ds_mismatch");
  WriteBytes(dir + "/cifar.npy", NpyBytes("<f4", false, {2, 3, 4, 4}, std::string(2 * 48 * 4, '\0')));
  auto graph = MnistGraph();
  EXPECT_EQ(OpenError({Source(dir + "/cifar.npy")}, *graph),
            dir + "/cifar.npy sample 0: input 'input' FLOAT[batch,1,28,28] expects samples of 784 elements [1,28,28], "
                  "got 48 elements [3,4,4]");
  auto u8 = InputsOnlyGraph({{"input", ir::DataType::kUint8, {kBatch, 3, 4, 4}}});
  EXPECT_EQ(OpenError({Source(dir + "/cifar.npy")}, *u8),
            dir + "/cifar.npy sample 0: input 'input' UINT8[batch,3,4,4] expects UINT8 data, got FLOAT (npy)");
}

TEST(DatasetTest, EmptyAndMissingSources) {
  auto graph = MnistGraph();
  const std::string empty = FreshDir("ds_empty");
  EXPECT_EQ(OpenError({Source(empty)}, *graph), empty + ": no samples (no .pb, .png, .jpg or .jpeg files)");
  DataSource images = Source(empty);
  images.format = DataFormat::kImageDir;
  EXPECT_EQ(OpenError({images}, *graph), empty + ": no samples (no .png, .jpg or .jpeg files)");
  DataSource pbs = Source(empty);
  pbs.format = DataFormat::kTensorProtoDir;
  EXPECT_EQ(OpenError({pbs}, *graph), empty + ": no samples (no .pb files)");
  WriteBytes(empty + "/none.npy", NpyBytes("<f4", false, {0, 1, 28, 28}, ""));
  EXPECT_EQ(OpenError({Source(empty + "/none.npy")}, *graph), empty + "/none.npy: no samples (the array's first dim is 0)");
  EXPECT_EQ(OpenError({Source(empty + "/nope.npy")}, *graph), empty + "/nope.npy: no such file or folder");
  WriteBytes(empty + "/mystery", "just some text");
  EXPECT_EQ(OpenError({Source(empty + "/mystery")}, *graph),
            empty + "/mystery: cannot tell the data format from the name or contents; give it explicitly (idx, npy, pb, "
                    "image, raw)");
}

TEST(DatasetTest, ImageFolder) {
  const std::string dir = FreshDir("ds_images");
  fs::create_directories(dir + "/sub");
  // b.png: 4x4 RGB, every pixel (30, 60, 90); a.jpg: uniform (200, 100, 50) 4x4;
  // sub/c.png: gray 8x8 ramp, resized/cropped below. Sorted: a.jpg, b.png, sub/c.png.
  std::vector<uint8_t> b_pixels, a_pixels;
  for (int i = 0; i < 16; ++i) {
    b_pixels.insert(b_pixels.end(), {30, 60, 90});
    a_pixels.insert(a_pixels.end(), {200, 100, 50});
  }
  WritePng(dir + "/b.png", 4, 4, 3, b_pixels);
  WriteJpeg(dir + "/a.jpg", 4, 4, 3, a_pixels);
  std::vector<uint8_t> ramp(64);
  for (int i = 0; i < 64; ++i) ramp[i] = static_cast<uint8_t>(4 * i);
  WritePng(dir + "/sub/c.png", 8, 8, 1, ramp);
  WriteBytes(dir + "/notes.txt", "ignored");

  DataSource source = Source(dir);
  source.image.resize_shorter = 4;
  source.image.color = ImagePreprocess::Color::kBgr;
  source.image.mean = {0.5f};
  source.image.std = {0.5f, 0.25f, 0.125f};
  auto graph = InputsOnlyGraph({{"img", ir::DataType::kFloat32, {kBatch, 3, 4, 4}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({source}, *graph, 0));
  EXPECT_EQ(ds->size(), 3);
  EXPECT_EQ(ds->DescribeSample(0), dir + "/a.jpg");
  EXPECT_EQ(ds->DescribeSample(2), dir + "/sub/c.png");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> batch, ds->ReadBatch(0, 3));
  const ir::Tensor& t = batch[0].tensor;
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 3, 4, 4}));
  const float* p = t.data<float>();
  // b.png (sample 1), NCHW, BGR: channel 0 = B = 90 -> (90/255 - 0.5) / 0.5.
  EXPECT_FLOAT_EQ(p[48 + 0], (90.f / 255 - 0.5f) / 0.5f);
  EXPECT_FLOAT_EQ(p[48 + 16 + 5], (60.f / 255 - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(p[48 + 32 + 15], (30.f / 255 - 0.5f) / 0.125f);
  // a.jpg (sample 0): JPEG round trip within 2 levels.
  EXPECT_NEAR(p[0], (50.f / 255 - 0.5f) / 0.5f, 2.f / 255 / 0.5f);
  EXPECT_NEAR(p[32], (200.f / 255 - 0.5f) / 0.125f, 2.f / 255 / 0.125f);
  // sub/c.png (sample 2): 8x8 -> 4x4 samples the source at 0.5, 2.5, 4.5, 6.5 (half-pixel),
  // i.e. the mean of each 2x2 block: (row r, col c) = 4 * (8 * (2r + 0.5) + 2c + 0.5); gray
  // replicated to all three channels.
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c) {
      const float v = 4.f * (8 * (2 * r + 0.5f) + 2 * c + 0.5f);
      EXPECT_FLOAT_EQ(p[96 + r * 4 + c], (v / 255 - 0.5f) / 0.5f) << r << "," << c;
      EXPECT_FLOAT_EQ(p[96 + 32 + r * 4 + c], (v / 255 - 0.5f) / 0.125f) << r << "," << c;
    }
  }

  // NHWC model, gray, a single image file.
  DataSource one = Source(dir + "/sub/c.png");
  one.image.layout = ImagePreprocess::Layout::kNhwc;
  one.image.color = ImagePreprocess::Color::kGray;
  one.image.center_crop = 2;
  auto nhwc = InputsOnlyGraph({{"img", ir::DataType::kFloat32, {kBatch, 2, 2, 1}}});
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> single, OpenDataset({one}, *nhwc, 0));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<ir::NamedTensor> sb, single->ReadBatch(0, 1));
  EXPECT_EQ(sb[0].tensor.dims(), (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(sb[0].tensor.data<float>()[0], ramp[3 * 8 + 3] / 255.f);
  EXPECT_EQ(sb[0].tensor.data<float>()[3], ramp[4 * 8 + 4] / 255.f);
}

TEST(DatasetTest, ImageErrors) {
  const std::string dir = FreshDir("ds_image_errors");
  WritePng(dir + "/a.png", 4, 4, 3, std::vector<uint8_t>(48, 9));
  WritePng(dir + "/b.png", 5, 4, 3, std::vector<uint8_t>(60, 9));
  auto gray_model = InputsOnlyGraph({{"img", ir::DataType::kFloat32, {kBatch, 1, 4, 4}}});
  EXPECT_EQ(OpenError({Source(dir)}, *gray_model),
            dir + "/a.png: input 'img' FLOAT[batch,1,4,4] read as nchw expects 1 channel, image preprocessing gives 3 "
                  "(color rgb)");
  auto rgb_model = InputsOnlyGraph({{"img", ir::DataType::kFloat32, {kBatch, 3, 4, 4}}});
  EXPECT_EQ(OpenError({Source(dir)}, *rgb_model),
            dir + "/b.png: image is 5x4 (HxW) after preprocessing, input 'img' FLOAT[batch,3,4,4] expects 4x4 (layout nchw)");
  // Symbolic height and width come from the first image; the others must match it.
  auto any_size = std::make_unique<ir::Graph>();
  ir::TensorType any_type{ir::DataType::kFloat32,
                          {true, {ir::Dim::Symbolic("n"), ir::Dim::Known(3), ir::Dim::Symbolic("h"), ir::Dim::Symbolic("w")}},
                          {}};
  ASSERT_TRUE(any_size->AddInput("img", any_type).ok());
  EXPECT_EQ(OpenError({Source(dir)}, *any_size),
            dir + "/b.png: image is 5x4 (HxW) after preprocessing, input 'img' FLOAT[n,3,h,w] expects 4x4 (layout nchw)");
  auto flat = std::make_unique<ir::Graph>();
  ASSERT_TRUE(flat->AddInput("img", {ir::DataType::kFloat32, {true, {ir::Dim::Symbolic("n"), ir::Dim::Symbolic("k")}}, {}}).ok());
  EXPECT_EQ(OpenError({Source(dir)}, *flat),
            dir + "/a.png: input 'img' FLOAT[n,k] expects samples shaped like [n,k] without its batch dim, got [3,4,4]");
  DataSource crop = Source(dir);
  crop.image.center_crop = 6;
  EXPECT_EQ(OpenError({crop}, *rgb_model), dir + "/a.png: image is 4x4 (HxW), smaller than center_crop 6");
  DataSource bad_mean = Source(dir);
  bad_mean.image.mean = {1, 2};
  EXPECT_EQ(OpenError({bad_mean}, *rgb_model), "image preprocessing: mean has 2 values; expected 1 or 3 (color rgb)");
  auto u8 = InputsOnlyGraph({{"img", ir::DataType::kUint8, {kBatch, 3, 4, 4}}});
  fs::remove(dir + "/b.png");
  EXPECT_EQ(OpenError({Source(dir)}, *u8), dir + "/a.png: input 'img' UINT8[batch,3,4,4] expects UINT8 data, got FLOAT (image)");

  // A header that reads but data that does not: found when the batch is read.
  std::vector<uint8_t> noise(64 * 64 * 3);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 131 % 251);
  WriteJpeg(dir + "/c.jpg", 64, 64, 3, noise);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string jpg, base::ReadFileToString(dir + "/c.jpg"));
  WriteBytes(dir + "/c.jpg", jpg.substr(0, jpg.size() / 2));
  DataSource crop4 = Source(dir);
  crop4.image.center_crop = 4;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Dataset> ds, OpenDataset({crop4}, *rgb_model, 0));
  QFUSE_EXPECT_OK(ds->ReadBatch(0, 1));
  absl::StatusOr<std::vector<ir::NamedTensor>> broken = ds->ReadBatch(0, 2);
  ASSERT_FALSE(broken.ok());
  EXPECT_CONTAINS(broken.status().message(), "input 'img': " + dir + "/c.jpg: cannot decode JPEG (");
  // Mixed .pb files and images in one folder need an explicit format.
  QFUSE_ASSERT_OK(ir::WriteTensorFile(ir::Tensor::FromVector<float>({3, 4, 4}, std::vector<float>(48)), "img", dir + "/x.pb"));
  EXPECT_EQ(OpenError({Source(dir)}, *rgb_model), dir + ": holds both .pb files and images; give the data format explicitly");
  crop4.format = DataFormat::kImageDir;
  QFUSE_EXPECT_OK(OpenDataset({crop4}, *rgb_model, 0));
}

TEST(DatasetTest, DetectFormat) {
  const std::string dir = FreshDir("ds_detect");
  WriteBytes(dir + "/x.npy", NpyBytes("<f4", false, {1}, AsBytes<float>({1})));
  WriteBytes(dir + "/npy_without_extension", NpyBytes("<f4", false, {1}, AsBytes<float>({1})));
  WriteBytes(dir + "/idx_without_extension", IdxBytes(0x08, {1}, "\x01"));
  testing::WriteGzip(dir + "/gzip_without_extension", IdxBytes(0x08, {1}, "\x01"));
  WriteBytes(dir + "/y-ubyte", "");
  WriteBytes(dir + "/z.JPG", "");
  WriteBytes(dir + "/w.f32", "");
  WriteBytes(dir + "/v.pb", "");
  const std::vector<std::pair<std::string, DataFormat>> cases = {
      {"x.npy", DataFormat::kNpy},          {"npy_without_extension", DataFormat::kNpy},
      {"idx_without_extension", DataFormat::kIdx}, {"gzip_without_extension", DataFormat::kIdx},
      {"y-ubyte", DataFormat::kIdx},        {"z.JPG", DataFormat::kImageDir},
      {"w.f32", DataFormat::kRawFloat32},   {"v.pb", DataFormat::kTensorProtoDir},
  };
  for (const auto& [name, format] : cases) {
    QFUSE_ASSERT_OK_AND_ASSIGN(DataFormat got, DetectDataFormat(dir + "/" + name));
    EXPECT_EQ(got, format) << name;
  }
}

TEST(DatasetTest, ParseDataSourcesAndFormats) {
  DataSource defaults;
  defaults.format = DataFormat::kRawFloat32;
  defaults.raw_shape = {3};
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<DataSource> s,
                             ParseDataSources({"data/x.npy", "ids:tok.raw", "input:0:/d/x.npy"}, defaults));
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].input_name, "");
  EXPECT_EQ(s[0].path, "data/x.npy");
  EXPECT_EQ(s[0].raw_shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(s[0].format, DataFormat::kRawFloat32);
  EXPECT_EQ(s[1].input_name, "ids");
  EXPECT_EQ(s[1].path, "tok.raw");
  EXPECT_EQ(s[2].input_name, "input:0");
  EXPECT_EQ(s[2].path, "/d/x.npy");
  // An existing path with ':' is a path.
  const std::string dir = FreshDir("ds_parse");
  WriteBytes(dir + "/a:b.npy", "");
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<DataSource> colon, ParseDataSources({dir + "/a:b.npy"}));
  EXPECT_EQ(colon[0].input_name, "");
  EXPECT_EQ(colon[0].path, dir + "/a:b.npy");

  EXPECT_EQ(ParseDataSources({"x:"}).status().message(), "calibration data 'x:': empty path");
  EXPECT_EQ(ParseDataSources({""}).status().message(), "calibration data '': empty path");
  EXPECT_EQ(ParseDataSources({":p"}).status().message(), "calibration data ':p': empty input name before ':'");
  EXPECT_EQ(ParseDataSources({"a:p", "a:q"}).status().message(), "calibration data 'a:q': input 'a' is given twice");
  EXPECT_EQ(ParseDataSources({"p", "q"}).status().message(),
            "calibration data 'q': more than one value without an input name; use name:path");

  for (DataFormat f : {DataFormat::kAuto, DataFormat::kIdx, DataFormat::kNpy, DataFormat::kTensorProtoDir,
                       DataFormat::kImageDir, DataFormat::kRawFloat32}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(DataFormat back, ParseDataFormat(DataFormatName(f)));
    EXPECT_EQ(back, f);
  }
  EXPECT_EQ(ParseDataFormat("png").status().message(),
            "unknown data format 'png' (expected auto, idx, npy, pb, image or raw)");
}

}  // namespace
}  // namespace qfuse::data
