// The per-input sample sources behind data::Dataset: one model input's samples read from
// one file or folder, in their stored type and shape (conversion to the model input's type
// and batching are the dataset's job). See DataSource in dataset.h for the formats.
#ifndef QFUSE_DATA_DATASET_SOURCES_H_
#define QFUSE_DATA_DATASET_SOURCES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/data_source.h"
#include "ir/data_type.h"

namespace qfuse::data {

// The stored type and shape of one sample (no batch dim).
struct SampleInfo {
  ir::DataType dtype = ir::DataType::kUndefined;
  std::vector<int64_t> dims;
};

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Samples available (already capped by SourceContext::max_samples); always >= 1.
  virtual int64_t size() const = 0;
  // Type and shape of sample `index` in [0, size()), known without decoding it.
  virtual SampleInfo Info(int64_t index) const = 0;
  // Writes sample `index`: NumElements(Info(index).dims) elements of Info(index).dtype.
  // Errors name the file.
  virtual absl::Status Read(int64_t index, void* out) = 0;
  // "train-images-idx3-ubyte.gz sample 17", "imgs/cat.jpg".
  virtual std::string Describe(int64_t index) const = 0;
};

struct SourceContext {
  int input_position = 0;   // the model input's position among the graph inputs (input_<k>.pb)
  int64_t model_rank = -1;  // the input's declared rank; -1 when unknown
  int64_t max_samples = 0;  // read at most this many samples; 0: all
};

// Resolves DataFormat::kAuto for `path` by extension, folder contents or file magic.
absl::StatusOr<DataFormat> DetectDataFormat(const std::string& path);

// Opens `source` read as `format` (not kAuto). A source without samples is an error
// ("<path>: no samples ...").
absl::StatusOr<std::unique_ptr<SampleSource>> OpenSampleSource(const DataSource& source, DataFormat format,
                                                               const SourceContext& context);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_DATASET_SOURCES_H_
