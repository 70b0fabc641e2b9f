// Writers for tiny calibration-data fixtures (IDX, .npy, PNG, JPEG) in TEST_TMPDIR, and
// graphs that only declare inputs, for the calib dataset tests.
#ifndef QFUSE_TESTS_DATA_DATASET_FIXTURES_H_
#define QFUSE_TESTS_DATA_DATASET_FIXTURES_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_type.h"

namespace qfuse::testing {

// A fresh, empty folder TEST_TMPDIR/<name>.
std::string FreshDir(const std::string& name);

void WriteBytes(const std::string& path, const std::string& bytes);

// IDX file: big-endian magic 0x0000<type><rank>, dims, then `payload` as is.
std::string IdxBytes(uint8_t type, const std::vector<uint32_t>& dims, const std::string& payload);
// Writes `bytes` through zlib's gzip writer.
void WriteGzip(const std::string& path, const std::string& bytes);

// .npy version 1.0 file with the given header fields and raw data.
std::string NpyBytes(const std::string& descr, bool fortran_order, const std::vector<int64_t>& shape,
                     const std::string& data);

template <typename T>
std::string AsBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// 8-bit PNG / baseline JPEG (quality 100) from HWC pixels with 1 or 3 channels.
void WritePng(const std::string& path, int height, int width, int channels, const std::vector<uint8_t>& pixels);
void WriteJpeg(const std::string& path, int height, int width, int channels, const std::vector<uint8_t>& pixels);

// A graph with only inputs: each {name, dtype, dims}; a negative dim is the symbolic "batch".
struct InputSpec {
  std::string name;
  ir::DataType dtype = ir::DataType::kFloat32;
  std::vector<int64_t> dims;
  bool rank_known = true;
};
std::unique_ptr<ir::Graph> InputsOnlyGraph(const std::vector<InputSpec>& inputs);

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_DATA_DATASET_FIXTURES_H_
