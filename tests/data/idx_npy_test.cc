// The IDX and .npy readers: the real Fashion-MNIST files (pixel sums checked independently
// with Python's gzip module), tiny generated files, and every error path.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "base/file_util.h"
#include "data/idx.h"
#include "data/npy.h"
#include "gtest/gtest.h"
#include "tests/data/dataset_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::data {
namespace {

using ::qfuse::testing::AsBytes;
using ::qfuse::testing::FreshDir;
using ::qfuse::testing::IdxBytes;
using ::qfuse::testing::NpyBytes;
using ::qfuse::testing::WriteBytes;
using ::qfuse::testing::WriteGzip;

// Overridable like the ONNX test data (QFUSE_ONNX_TESTDATA); installed by tools/setup.sh.
std::string FashionMnistDir() {
  const char* env = std::getenv("QFUSE_FASHION_MNIST");
  return env != nullptr ? env : "/usr/share/datasets/fashion-mnist";
}

int64_t PixelSum(const ir::Tensor& images, int64_t index) {
  const uint8_t* p = images.data<uint8_t>() + index * 784;
  return std::accumulate(p, p + 784, int64_t{0});
}

TEST(IdxTest, FashionMnistTrainImages) {
  const std::string path = FashionMnistDir() + "/train-images-idx3-ubyte.gz";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing: run tools/setup.sh";
  const auto start = std::chrono::steady_clock::now();
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor all, ReadIdxFile(path));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "reading 60000 images once should take well under a second";
  ASSERT_EQ(all.dtype(), ir::DataType::kUint8);
  EXPECT_EQ(all.dims(), (std::vector<int64_t>{60000, 28, 28}));
  // Sums and centre pixels from an independent Python gzip/struct read.
  EXPECT_EQ(PixelSum(all, 0), 76247);
  EXPECT_EQ(PixelSum(all, 1), 84598);
  EXPECT_EQ(PixelSum(all, 2), 28662);
  EXPECT_EQ(PixelSum(all, 17), 73940);
  EXPECT_EQ(PixelSum(all, 511), 50351);
  EXPECT_EQ(PixelSum(all, 59999), 16684);
  EXPECT_EQ(all.data<uint8_t>()[0 * 784 + 14 * 28 + 14], 217);
  EXPECT_EQ(all.data<uint8_t>()[17 * 784 + 14 * 28 + 14], 182);
}

TEST(IdxTest, FashionMnistTestImagesLimited) {
  const std::string path = FashionMnistDir() + "/t10k-images-idx3-ubyte.gz";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing: run tools/setup.sh";
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor first, ReadIdxFile(path, 512));
  EXPECT_EQ(first.dims(), (std::vector<int64_t>{512, 28, 28}));
  EXPECT_EQ(PixelSum(first, 0), 33456);
  EXPECT_EQ(PixelSum(first, 1), 100994);
  EXPECT_EQ(PixelSum(first, 2), 51520);
  EXPECT_EQ(PixelSum(first, 17), 75608);
  EXPECT_EQ(PixelSum(first, 511), 67873);
  EXPECT_EQ(first.data<uint8_t>()[14 * 28 + 14], 110);
}

TEST(IdxTest, FashionMnistLabels) {
  const std::string dir = FashionMnistDir();
  ASSERT_TRUE(std::filesystem::exists(dir + "/t10k-labels-idx1-ubyte.gz")) << dir << " missing: run tools/setup.sh";
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> test, ReadIdxLabels(dir + "/t10k-labels-idx1-ubyte.gz"));
  ASSERT_EQ(test.size(), 10000u);
  EXPECT_EQ(std::vector<int64_t>(test.begin(), test.begin() + 10), (std::vector<int64_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  EXPECT_EQ(test.back(), 5);
  EXPECT_EQ(std::accumulate(test.begin(), test.end(), int64_t{0}), 45000);  // 1000 of each class
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> train, ReadIdxLabels(dir + "/train-labels-idx1-ubyte.gz"));
  ASSERT_EQ(train.size(), 60000u);
  EXPECT_EQ(std::vector<int64_t>(train.begin(), train.begin() + 10), (std::vector<int64_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  // An image file is not a label file.
  absl::StatusOr<std::vector<int64_t>> images = ReadIdxLabels(dir + "/t10k-images-idx3-ubyte.gz");
  ASSERT_FALSE(images.ok());
  EXPECT_NE(images.status().message().find("expected an IDX label file"), std::string::npos) << images.status();
}

TEST(IdxTest, PlainAndGzipUint8) {
  const std::string dir = FreshDir("idx_plain_gzip");
  const std::string bytes = IdxBytes(0x08, {3, 2, 2}, std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\xff", 12));
  WriteBytes(dir + "/a-idx3-ubyte", bytes);
  WriteGzip(dir + "/a-idx3-ubyte.gz", bytes);
  for (const std::string name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor t, ReadIdxFile(dir + "/" + name));
    EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 2, 2})) << name;
    EXPECT_EQ(t.data<uint8_t>()[11], 255) << name;
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor two, ReadIdxFile(dir + "/" + name, 2));
    EXPECT_EQ(two.dims(), (std::vector<int64_t>{2, 2, 2})) << name;
    EXPECT_EQ(two.data<uint8_t>()[7], 7) << name;
    QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor all, ReadIdxFile(dir + "/" + name, 100));
    EXPECT_EQ(all.dims()[0], 3) << name;
  }
}

TEST(IdxTest, BigEndianFloat32) {
  const std::string dir = FreshDir("idx_float");
  // 1.5f = 0x3FC00000, -2.f = 0xC0000000.
  WriteBytes(dir + "/f.idx", IdxBytes(0x0D, {2, 1}, std::string("\x3f\xc0\x00\x00\xc0\x00\x00\x00", 8)));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor t, ReadIdxFile(dir + "/f.idx"));
  ASSERT_EQ(t.dtype(), ir::DataType::kFloat32);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(t.data<float>()[0], 1.5f);
  EXPECT_EQ(t.data<float>()[1], -2.f);
}

void ExpectIdxError(const std::string& path, const std::string& fragment) {
  absl::StatusOr<ir::Tensor> t = ReadIdxFile(path);
  ASSERT_FALSE(t.ok()) << path;
  const std::string message(t.status().message());
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(IdxTest, Errors) {
  const std::string dir = FreshDir("idx_errors");
  WriteBytes(dir + "/magic", std::string("\x12\x34\x08\x01\x00\x00\x00\x01\x00", 9));
  ExpectIdxError(dir + "/magic", "not an IDX file: magic 0x12340801");
  WriteBytes(dir + "/int16", IdxBytes(0x0B, {1, 1}, std::string("\x00\x01", 2)));
  ExpectIdxError(dir + "/int16", "element type 0x0B (int16) is not supported");
  WriteBytes(dir + "/short_header", std::string("\x00\x00\x08\x03\x00\x00", 6));
  ExpectIdxError(dir + "/short_header", "truncated IDX header");
  WriteBytes(dir + "/tiny", std::string("\x00\x00", 2));
  ExpectIdxError(dir + "/tiny", "truncated IDX header");
  WriteBytes(dir + "/truncated", IdxBytes(0x08, {4, 2, 2}, std::string(10, '\x01')));
  ExpectIdxError(dir + "/truncated", "truncated IDX data: header declares 4 items of 4 bytes, file ends after item 2");
  ExpectIdxError(dir + "/missing.gz", "cannot open");

  // A gzip stream cut short, and one with damaged deflate data.
  const std::string payload = IdxBytes(0x08, {64, 28, 28}, std::string(64 * 784, '\x07'));
  WriteGzip(dir + "/ok.gz", payload);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string gz, base::ReadFileToString(dir + "/ok.gz"));
  WriteBytes(dir + "/cut.gz", gz.substr(0, gz.size() / 2));
  ExpectIdxError(dir + "/cut.gz", "truncated IDX data: header declares 64 items of 784 bytes, file ends after item");
  std::string damaged = gz;
  for (size_t i = 20; i < 40 && i < damaged.size(); ++i) damaged[i] = static_cast<char>(~damaged[i]);
  WriteBytes(dir + "/damaged.gz", damaged);
  ExpectIdxError(dir + "/damaged.gz", "corrupt gzip data (invalid");
  // A header declaring absurd dims fails cleanly without allocating them.
  WriteBytes(dir + "/huge", IdxBytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, ""));
  ExpectIdxError(dir + "/huge", "IDX dims shape [4294967295,4294967295,4294967295] overflows int64");
  WriteBytes(dir + "/big_declared", IdxBytes(0x08, {100000000, 28, 28}, std::string(100, '\x01')));
  ExpectIdxError(dir + "/big_declared", "truncated IDX data");
  // [0, 2^31, 2^31, 2^31]: empty, but its non-zero dims overflow int64 (an abort before;
  // found by the IDX fuzzer).
  WriteBytes(dir + "/zero_dim.idx", IdxBytes(0x08, {0, 0x80000000u, 0x80000000u, 0x80000000u}, ""));
  absl::StatusOr<ir::Tensor> zero_dim = ReadIdxFile(dir + "/zero_dim.idx");
  ASSERT_FALSE(zero_dim.ok());
  EXPECT_NE(zero_dim.status().message().find("overflows int64"), std::string::npos) << zero_dim.status();
}

TEST(NpyTest, Float32AndUint8) {
  const std::string dir = FreshDir("npy_ok");
  WriteBytes(dir + "/f.npy", NpyBytes("<f4", false, {3, 2}, AsBytes<float>({1, 2, 3, 4, 5, -6.5f})));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor f, ReadNpyFile(dir + "/f.npy"));
  ASSERT_EQ(f.dtype(), ir::DataType::kFloat32);
  EXPECT_EQ(f.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(f.data<float>()[5], -6.5f);
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor f2, ReadNpyFile(dir + "/f.npy", 2));
  EXPECT_EQ(f2.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f2.data<float>()[3], 4.f);

  WriteBytes(dir + "/u.npy", NpyBytes("|u1", false, {2, 1, 2}, std::string("\x01\x02\x03\xfe", 4)));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor u, ReadNpyFile(dir + "/u.npy"));
  ASSERT_EQ(u.dtype(), ir::DataType::kUint8);
  EXPECT_EQ(u.dims(), (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(u.data<uint8_t>()[3], 254);

  // One dim: (4,) -> four scalar samples.
  WriteBytes(dir + "/v.npy", NpyBytes("<f4", false, {4}, AsBytes<float>({1, 2, 3, 4})));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor v, ReadNpyFile(dir + "/v.npy"));
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{4}));

  // Format 2.0 (4-byte header length) with double-quoted keys and keys in another order.
  std::string dict = "{\"shape\": (1, 2), \"fortran_order\": False, \"descr\": \"<f4\"}";
  while ((12 + dict.size() + 1) % 64 != 0) dict.push_back(' ');
  dict.push_back('\n');
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) v2.push_back(static_cast<char>((dict.size() >> (8 * i)) & 0xFF));
  WriteBytes(dir + "/v2.npy", v2 + dict + AsBytes<float>({7, 8}));
  QFUSE_ASSERT_OK_AND_ASSIGN(ir::Tensor t2, ReadNpyFile(dir + "/v2.npy"));
  EXPECT_EQ(t2.dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t2.data<float>()[1], 8.f);
}

void ExpectNpyError(const std::string& path, const std::string& fragment) {
  absl::StatusOr<ir::Tensor> t = ReadNpyFile(path);
  ASSERT_FALSE(t.ok()) << path;
  const std::string message(t.status().message());
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(NpyTest, Errors) {
  const std::string dir = FreshDir("npy_errors");
  WriteBytes(dir + "/fortran.npy", NpyBytes("<f4", true, {2, 2}, AsBytes<float>({1, 2, 3, 4})));
  ExpectNpyError(dir + "/fortran.npy", "Fortran-order .npy arrays are not supported");
  WriteBytes(dir + "/f8.npy", NpyBytes("<f8", false, {1}, std::string(8, '\0')));
  ExpectNpyError(dir + "/f8.npy", "dtype '<f8' is not supported; expected '<f4' (float32) or '|u1' (uint8)");
  WriteBytes(dir + "/i8.npy", NpyBytes("<i8", false, {1}, std::string(8, '\0')));
  ExpectNpyError(dir + "/i8.npy", "dtype '<i8' is not supported");
  WriteBytes(dir + "/be.npy", NpyBytes(">f4", false, {1}, std::string(4, '\0')));
  ExpectNpyError(dir + "/be.npy", "dtype '>f4' is not supported");
  WriteBytes(dir + "/scalar.npy", NpyBytes("<f4", false, {}, std::string(4, '\0')));
  ExpectNpyError(dir + "/scalar.npy", "scalar");
  WriteBytes(dir + "/short.npy", NpyBytes("<f4", false, {10, 3}, AsBytes<float>({1, 2, 3})));
  ExpectNpyError(dir + "/short.npy", "truncated .npy data: header declares shape [10,3] (120 bytes), file holds 12");
  WriteBytes(dir + "/magic.npy", "PK\x03\x04 this is a zip (.npz?)");
  ExpectNpyError(dir + "/magic.npy", "not a .npy file");
  WriteBytes(dir + "/noshape.npy", NpyBytes("<f4", false, {1}, "").replace(10, 40, std::string(40, ' ')));
  ExpectNpyError(dir + "/noshape.npy", "header");
  ExpectNpyError(dir + "/missing.npy", "cannot open");
}

// Issue 13 F2: a header claiming 2^62 rows. 2^62 * 12 bytes overflows int64; the error
// must say so (it used to print "(0 bytes)"), and reading fewer rows than declared must
// not accept the damaged file either.
TEST(NpyTest, HeaderWithOverflowingRowCountIsRefused) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/huge_rows.npy";
  WriteBytes(path, NpyBytes("<f4", false, {int64_t{1} << 62, 3}, AsBytes<float>({1, 2, 3, 4, 5, 6})));
  ExpectNpyError(path, "overflows int64");
  absl::StatusOr<ir::Tensor> first_two = ReadNpyFile(path, 2);
  ASSERT_FALSE(first_two.ok());
  EXPECT_NE(first_two.status().message().find(path), std::string::npos) << first_two.status();
  // Rows that fit int64 but not the file: truncated, with the declared byte count.
  WriteBytes(path, NpyBytes("<f4", false, {int64_t{1} << 40, 3}, AsBytes<float>({1, 2, 3})));
  absl::StatusOr<ir::Tensor> declared = ReadNpyFile(path, 1);
  ASSERT_FALSE(declared.ok());
  EXPECT_NE(declared.status().message().find("would need more than 1 TiB"), std::string::npos) << declared.status();
  WriteBytes(path, NpyBytes("<f4", false, {1000, 3}, AsBytes<float>({1, 2, 3})));
  absl::StatusOr<ir::Tensor> truncated = ReadNpyFile(path, 1);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("header declares shape [1000,3] (12000 bytes), file holds 12"),
            std::string::npos)
      << truncated.status();
}

}  // namespace
}  // namespace qfuse::data
