#include "data/tensor_dataset.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace qfuse::data {
namespace {

// What the batches of one model input look like, resolved from its declared type and sample 0.
struct InputFeed {
  const ir::Value* input = nullptr;
  ir::DataType dtype = ir::DataType::kUndefined;
  std::vector<int64_t> sample_dims;  // per sample, no batch dim
  int64_t fixed_batch = 0;           // known leading dim, 0 when symbolic
};

std::string Where(int64_t index, const ir::Value& input) {
  return absl::StrCat("calibration sample ", index, ", input '", input.name(), "' ", input.type().ToString());
}

// The per-sample dims of a sample shaped `got` for an input declared `shape`: `got` as it
// is, or without a leading batch dim of 1; false when neither fits the declared known dims.
// An unknown rank accepts any shape, as it is.
bool PerSampleDims(const std::vector<int64_t>& got, const ir::Shape& shape, std::vector<int64_t>* out) {
  if (!shape.rank_known) {
    *out = got;
    return true;
  }
  const size_t rank = shape.dims.size() - 1;
  if (got.size() == rank + 1 && got[0] == 1) {
    out->assign(got.begin() + 1, got.end());
  } else if (got.size() == rank) {
    *out = got;
  } else {
    return false;
  }
  for (size_t d = 0; d < rank; ++d) {
    const ir::Dim& dim = shape.dims[d + 1];
    if (dim.is_known() && dim.value != (*out)[d]) return false;
  }
  return true;
}

absl::Status CheckSample(InputFeed& feed, const ir::Tensor& t, int64_t index) {
  const ir::TensorType& type = feed.input->type();
  if (index == 0) feed.dtype = type.dtype == ir::DataType::kUndefined ? t.dtype() : type.dtype;
  if (t.dtype() != feed.dtype) {
    return absl::InvalidArgumentError(absl::StrCat(Where(index, *feed.input), ": expected ",
                                                   ir::DataTypeName(feed.dtype), " data, got ",
                                                   ir::DataTypeName(t.dtype())));
  }
  std::vector<int64_t> dims;
  const bool fits = PerSampleDims(t.dims(), type.shape, &dims);
  if (fits && index == 0) feed.sample_dims = dims;
  if (!fits || dims != feed.sample_dims) {
    const std::string expected =
        index == 0 ? absl::StrCat(type.shape.ToString(), " without its batch dim, or with a batch dim of 1")
                   : absl::StrCat(ir::DimsToString(feed.sample_dims), " (as sample 0), or with a batch dim of 1");
    return absl::InvalidArgumentError(
        absl::StrCat(Where(index, *feed.input), ": expected a sample shaped ", expected, ", got ",
                     ir::DimsToString(t.dims())));
  }
  return absl::OkStatus();
}

class TensorDataset : public Dataset {
 public:
  TensorDataset(std::shared_ptr<const TensorSamples> samples, std::vector<InputFeed> feeds,
                std::vector<std::vector<int>> order, int64_t size, int64_t fixed_batch)
      : samples_(std::move(samples)),
        feeds_(std::move(feeds)),
        order_(std::move(order)),
        size_(size),
        fixed_batch_(fixed_batch) {}

  int64_t size() const override { return size_; }
  int64_t fixed_batch() const override { return fixed_batch_; }

  absl::StatusOr<std::vector<ir::NamedTensor>> ReadBatch(int64_t start, int64_t count) override {
    QFUSE_RETURN_IF_ERROR(CheckBatchRange(start, count, size_, fixed_batch_));
    std::vector<ir::NamedTensor> out;
    for (size_t k = 0; k < feeds_.size(); ++k) {
      const InputFeed& feed = feeds_[k];
      std::vector<int64_t> dims = {count};
      dims.insert(dims.end(), feed.sample_dims.begin(), feed.sample_dims.end());
      QFUSE_ASSIGN_OR_RETURN(ir::Tensor batch, ir::Tensor::CreateUninitialized(feed.dtype, std::move(dims),
                                                                               "calibration batch"));
      uint8_t* dst = static_cast<uint8_t*>(batch.raw_data());
      for (int64_t i = start; i < start + count; ++i) {
        const ir::Tensor& t = (*samples_)[i][order_[i][k]].tensor;
        std::memcpy(dst, t.raw_data(), t.byte_size());
        dst += t.byte_size();
      }
      out.push_back({feed.input->name(), std::move(batch)});
    }
    return out;
  }

  std::string DescribeSample(int64_t index) const override {
    if (index < 0 || index >= size_) return absl::StrCat("sample ", index, " (out of range)");
    return absl::StrCat("in-memory sample ", index);
  }

 private:
  std::shared_ptr<const TensorSamples> samples_;
  std::vector<InputFeed> feeds_;
  std::vector<std::vector<int>> order_;  // order_[i][k]: index in sample i of input k's tensor
  int64_t size_;
  int64_t fixed_batch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Dataset>> OpenTensorDataset(std::shared_ptr<const TensorSamples> samples,
                                                           const ir::Graph& model, int64_t max_samples) {
  const std::vector<ir::Value*>& inputs = model.inputs();
  if (inputs.empty()) return absl::InvalidArgumentError("the model has no inputs to feed calibration data to");
  if (max_samples < 0) return absl::InvalidArgumentError(absl::StrCat("max_samples must be >= 0, got ", max_samples));
  if (samples == nullptr || samples->empty()) return absl::InvalidArgumentError("no calibration samples given");
  const int64_t available = static_cast<int64_t>(samples->size());
  const int64_t size = max_samples > 0 ? std::min(max_samples, available) : available;

  std::vector<std::string> names;
  std::vector<InputFeed> feeds;
  int64_t fixed_batch = 0;
  for (const ir::Value* input : inputs) {
    names.push_back(input->name());
    InputFeed feed;
    feed.input = input;
    const ir::Shape& shape = input->type().shape;
    if (shape.rank_known && shape.rank() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("input '", input->name(), "' ", input->type().ToString(),
                                                     " is a scalar: calibration data needs a leading batch dim"));
    }
    if (shape.rank_known && shape.dims[0].is_known()) feed.fixed_batch = shape.dims[0].value;
    if (feed.fixed_batch > 0 && fixed_batch > 0 && feed.fixed_batch != fixed_batch) {
      return absl::InvalidArgumentError(absl::StrCat("model inputs declare different fixed batch sizes (", fixed_batch,
                                                     " and ", feed.fixed_batch, " for '", input->name(), "')"));
    }
    if (feed.fixed_batch > 0) fixed_batch = feed.fixed_batch;
    feeds.push_back(std::move(feed));
  }

  std::vector<std::vector<int>> order(size, std::vector<int>(inputs.size(), -1));
  for (int64_t i = 0; i < size; ++i) {
    const std::vector<ir::NamedTensor>& sample = (*samples)[i];
    for (size_t j = 0; j < sample.size(); ++j) {
      size_t k = 0;
      while (k < inputs.size() && inputs[k]->name() != sample[j].name) ++k;
      if (k == inputs.size()) {
        return absl::InvalidArgumentError(absl::StrCat("calibration sample ", i, ": '", sample[j].name,
                                                       "' is not a model input (inputs: ", absl::StrJoin(names, ", "),
                                                       ")"));
      }
      if (order[i][k] >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("calibration sample ", i, ": input '", sample[j].name, "' is given twice"));
      }
      order[i][k] = static_cast<int>(j);
    }
    for (size_t k = 0; k < inputs.size(); ++k) {
      if (order[i][k] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(Where(i, *inputs[k]), ": missing from the sample"));
      }
      QFUSE_RETURN_IF_ERROR(CheckSample(feeds[k], sample[order[i][k]].tensor, i));
    }
  }
  return std::unique_ptr<Dataset>(
      new TensorDataset(std::move(samples), std::move(feeds), std::move(order), size, fixed_batch));
}

}  // namespace qfuse::data
