#include "data/dataset.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "data/dataset_sources.h"

namespace qfuse::data {
namespace {

// One model input and where its samples come from.
struct Feed {
  const ir::Value* input = nullptr;
  int position = 0;
  DataSource spec;
  DataFormat format = DataFormat::kAuto;
  std::unique_ptr<SampleSource> source;
  ir::DataType dtype = ir::DataType::kUndefined;  // of the batches produced
  int64_t fixed_batch = 0;                        // known leading dim, 0 when symbolic
  std::vector<int64_t> sample_dims;               // per-sample dims of the batches produced
};

// "input 'input' FLOAT[batch,1,28,28]".
std::string DescribeInput(const ir::Value& input) {
  return absl::StrCat("input '", input.name(), "' ", input.type().ToString());
}

std::string InputNames(const ir::Graph& model) {
  std::vector<std::string> names;
  for (const ir::Value* v : model.inputs()) names.push_back(v->name());
  return absl::StrJoin(names, ", ");
}

std::string Plural(int64_t n, absl::string_view word) { return absl::StrCat(n, " ", word, n == 1 ? "" : "s"); }

// Whether stored samples of `stored` type can feed an input of type `target`.
bool Convertible(ir::DataType stored, ir::DataType target, DataFormat format) {
  if (stored == target) return true;
  const bool uint8_array = format == DataFormat::kIdx || format == DataFormat::kNpy;
  return uint8_array && stored == ir::DataType::kUint8 && target == ir::DataType::kFloat32;
}

std::string DimText(int64_t value, const ir::Dim& dim) {
  if (value >= 0) return absl::StrCat(value);
  return dim.symbol.empty() ? "?" : dim.symbol;
}

// Image-specific checks with messages in image terms: channels, then height x width.
absl::Status CheckImageSample(const Feed& feed, const SampleInfo& info, int64_t index) {
  const ir::Shape& shape = feed.input->type().shape;
  if (!shape.rank_known || shape.rank() != 4 || info.dims.size() != 3) return absl::OkStatus();
  const bool nchw = feed.spec.image.layout == ImagePreprocess::Layout::kNchw;
  const ir::Dim& c = shape.dims[nchw ? 1 : 3];
  const ir::Dim& h = shape.dims[nchw ? 2 : 1];
  const ir::Dim& w = shape.dims[nchw ? 3 : 2];
  const int64_t channels = OutputChannels(feed.spec.image);
  if (c.is_known() && c.value != channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        feed.source->Describe(index), ": ", DescribeInput(*feed.input), " read as ", LayoutName(feed.spec.image.layout),
        " expects ", Plural(c.value, "channel"), ", image preprocessing gives ", channels, " (color ",
        ColorName(feed.spec.image.color), ")"));
  }
  // Height and width as declared, or (symbolic) as resolved from the first image.
  const auto wanted = [&](const ir::Dim& d, size_t axis) -> int64_t {
    if (d.is_known()) return d.value;
    return feed.sample_dims.size() == 3 ? feed.sample_dims[axis] : -1;
  };
  const int64_t want_h = wanted(h, nchw ? 1 : 0);
  const int64_t want_w = wanted(w, nchw ? 2 : 1);
  const int64_t got_h = info.dims[nchw ? 1 : 0];
  const int64_t got_w = info.dims[nchw ? 2 : 1];
  if ((want_h >= 0 && want_h != got_h) || (want_w >= 0 && want_w != got_w)) {
    return absl::InvalidArgumentError(absl::StrCat(
        feed.source->Describe(index), ": image is ", got_h, "x", got_w, " (HxW) after preprocessing, ",
        DescribeInput(*feed.input), " expects ", DimText(want_h, h), "x", DimText(want_w, w), " (layout ",
        LayoutName(feed.spec.image.layout), ")"));
  }
  return absl::OkStatus();
}

// Resolves the feed's batch dtype and per-sample dims from the model input and the first
// sample, then checks every sample against them.
absl::Status Resolve(Feed& feed, int64_t samples) {
  const ir::TensorType& type = feed.input->type();
  const SampleInfo first = feed.source->Info(0);
  feed.dtype = type.dtype == ir::DataType::kUndefined ? first.dtype : type.dtype;
  std::vector<ir::Dim> declared;  // per-sample dims as declared; empty with unknown rank
  if (type.shape.rank_known) {
    if (type.shape.rank() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(DescribeInput(*feed.input), " is a scalar: calibration data needs a leading batch dim"));
    }
    if (type.shape.dims[0].is_known()) feed.fixed_batch = type.shape.dims[0].value;
    declared.assign(type.shape.dims.begin() + 1, type.shape.dims.end());
  }
  bool all_known = type.shape.rank_known;
  for (const ir::Dim& d : declared) all_known = all_known && d.is_known();
  if (all_known) {
    for (const ir::Dim& d : declared) feed.sample_dims.push_back(d.value);
  } else if (type.shape.rank_known) {
    // Image messages (channels, HxW) say more than the generic one below.
    if (feed.format == DataFormat::kImageDir) QFUSE_RETURN_IF_ERROR(CheckImageSample(feed, first, 0));
    feed.sample_dims = first.dims;
    bool fits = first.dims.size() == declared.size();
    for (size_t i = 0; fits && i < declared.size(); ++i) fits = !declared[i].is_known() || declared[i].value == first.dims[i];
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(feed.source->Describe(0), ": ", DescribeInput(*feed.input),
                                                     " expects samples shaped like ", type.shape.ToString(),
                                                     " without its batch dim, got ", ir::DimsToString(first.dims)));
    }
  } else {
    feed.sample_dims = first.dims;
  }
  const int64_t expected_elements = ir::NumElements(feed.sample_dims);
  const size_t per_channel_values = std::max(feed.spec.image.mean.size(), feed.spec.image.std.size());
  if (feed.format != DataFormat::kImageDir && per_channel_values > 1 &&
      (feed.sample_dims.empty() || feed.sample_dims[0] != static_cast<int64_t>(per_channel_values))) {
    return absl::InvalidArgumentError(absl::StrCat(feed.source->Describe(0), ": ", per_channel_values,
                                                   " mean/std values, but samples are ",
                                                   ir::DimsToString(feed.sample_dims), " (channels first expected)"));
  }

  for (int64_t i = 0; i < samples; ++i) {
    const SampleInfo info = i == 0 ? first : feed.source->Info(i);
    if (!Convertible(info.dtype, feed.dtype, feed.format)) {
      return absl::InvalidArgumentError(absl::StrCat(feed.source->Describe(i), ": ", DescribeInput(*feed.input),
                                                     " expects ", ir::DataTypeName(feed.dtype), " data, got ",
                                                     ir::DataTypeName(info.dtype), " (", DataFormatName(feed.format),
                                                     ")"));
    }
    if (feed.format == DataFormat::kImageDir) QFUSE_RETURN_IF_ERROR(CheckImageSample(feed, info, i));
    const int64_t elements = ir::NumElements(info.dims);
    if (elements != expected_elements || (!all_known && info.dims != feed.sample_dims)) {
      return absl::InvalidArgumentError(absl::StrCat(
          feed.source->Describe(i), ": ", DescribeInput(*feed.input), " expects samples of ",
          Plural(expected_elements, "element"), " ", ir::DimsToString(feed.sample_dims), ", got ",
          Plural(elements, "element"), " ", ir::DimsToString(info.dims)));
    }
  }
  return absl::OkStatus();
}

class MultiSourceDataset : public Dataset {
 public:
  MultiSourceDataset(std::vector<Feed> feeds, int64_t size, int64_t fixed_batch)
      : feeds_(std::move(feeds)), size_(size), fixed_batch_(fixed_batch) {}

  int64_t size() const override { return size_; }
  int64_t fixed_batch() const override { return fixed_batch_; }

  absl::StatusOr<std::vector<ir::NamedTensor>> ReadBatch(int64_t start, int64_t count) override {
    QFUSE_RETURN_IF_ERROR(CheckBatchRange(start, count, size_, fixed_batch_));
    std::vector<ir::NamedTensor> out;
    for (Feed& feed : feeds_) {
      std::vector<int64_t> dims = {count};
      dims.insert(dims.end(), feed.sample_dims.begin(), feed.sample_dims.end());
      ir::Tensor batch(feed.dtype, std::move(dims));
      const int64_t elements = ir::NumElements(feed.sample_dims);
      const size_t sample_bytes = elements * ir::ElementSize(feed.dtype);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t index = start + i;
        uint8_t* dst = static_cast<uint8_t*>(batch.raw_data()) + i * sample_bytes;
        absl::Status status;
        if (feed.source->Info(index).dtype == feed.dtype) {
          status = feed.source->Read(index, dst);
        } else {  // uint8 -> float (see Convertible)
          scratch_.resize(elements);
          status = feed.source->Read(index, scratch_.data());
          const PixelScaler scale(feed.spec.idx_scale);
          float* f = reinterpret_cast<float*>(dst);
          const std::vector<float>& mean = feed.spec.image.mean;
          const std::vector<float>& stdev = feed.spec.image.std;
          if (mean.empty() && stdev.empty()) {
            for (int64_t e = 0; e < elements; ++e) f[e] = scale(scratch_[e]);
          } else {  // (value * scale - mean[c]) / std[c], c indexing the sample's leading dim
            const int64_t channels = std::max(mean.size(), stdev.size()) > 1 ? feed.sample_dims[0] : 1;
            const int64_t per_channel = elements / channels;
            for (int64_t c = 0; c < channels; ++c) {
              const float m = mean.empty() ? 0.f : mean[mean.size() > 1 ? c : 0];
              const float d = stdev.empty() ? 1.f : stdev[stdev.size() > 1 ? c : 0];
              for (int64_t e = c * per_channel; e < (c + 1) * per_channel; ++e) f[e] = (scale(scratch_[e]) - m) / d;
            }
          }
        }
        if (!status.ok()) {
          return absl::Status(status.code(), absl::StrCat("input '", feed.input->name(), "': ", status.message()));
        }
      }
      out.push_back({feed.input->name(), std::move(batch)});
    }
    return out;
  }

  std::string DescribeSample(int64_t index) const override {
    if (index < 0 || index >= size_) return absl::StrCat("sample ", index, " (out of range)");
    if (feeds_.size() == 1) return feeds_[0].source->Describe(index);
    std::vector<std::string> parts;
    for (const Feed& feed : feeds_) parts.push_back(absl::StrCat(feed.input->name(), ": ", feed.source->Describe(index)));
    return absl::StrJoin(parts, ", ");
  }

 private:
  std::vector<Feed> feeds_;
  int64_t size_;
  int64_t fixed_batch_;
  std::vector<uint8_t> scratch_;
};

class SlicedDataset : public Dataset {
 public:
  SlicedDataset(std::unique_ptr<Dataset> data, int64_t start, int64_t count)
      : data_(std::move(data)), start_(start), count_(count) {}

  int64_t size() const override { return count_; }
  int64_t fixed_batch() const override { return data_->fixed_batch(); }
  absl::StatusOr<std::vector<ir::NamedTensor>> ReadBatch(int64_t start, int64_t count) override {
    if (start < 0 || count <= 0 || start > count_ - count) {
      return absl::OutOfRangeError(absl::StrCat("samples [", start, ", ", start + count,
                                                ") are out of range: the dataset has ", count_));
    }
    return data_->ReadBatch(start_ + start, count);
  }
  std::string DescribeSample(int64_t index) const override { return data_->DescribeSample(start_ + index); }

 private:
  std::unique_ptr<Dataset> data_;
  int64_t start_;
  int64_t count_;
};

}  // namespace

absl::StatusOr<int64_t> BatchWithinInputBytes(Dataset& data, int64_t max_samples, int64_t max_input_bytes) {
  if (data.fixed_batch() > 0) return data.fixed_batch();  // the only count ReadBatch takes
  if (data.size() == 0 || max_samples <= 1) return std::max<int64_t>(max_samples, 1);
  QFUSE_ASSIGN_OR_RETURN(const std::vector<ir::NamedTensor> first, data.ReadBatch(0, 1));
  int64_t sample_bytes = 0;
  for (const ir::NamedTensor& input : first) sample_bytes += static_cast<int64_t>(input.tensor.byte_size());
  if (sample_bytes <= 0) return max_samples;
  return std::clamp<int64_t>(max_input_bytes / sample_bytes, 1, max_samples);
}

absl::Status CheckBatchRange(int64_t start, int64_t count, int64_t size, int64_t fixed_batch) {
  if (start < 0 || count <= 0 || start > size - count) {
    return absl::OutOfRangeError(absl::StrCat("calibration samples [", start, ", ", start + count,
                                              ") are out of range: the dataset has ", size));
  }
  if (fixed_batch > 0 && count != fixed_batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model's batch dim is fixed at ", fixed_batch, "; cannot read a batch of ", count));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Dataset>> SliceDataset(std::unique_ptr<Dataset> data, int64_t start, int64_t count) {
  if (start < 0 || count <= 0 || start > data->size() - count) {
    return absl::OutOfRangeError(
        absl::StrCat("samples [", start, ", ", start + count, ") are not inside the dataset's ", data->size()));
  }
  return std::unique_ptr<Dataset>(new SlicedDataset(std::move(data), start, count));
}

absl::StatusOr<std::unique_ptr<Dataset>> OpenDataset(const std::vector<DataSource>& sources, const ir::Graph& model,
                                                     int64_t max_samples) {
  const std::vector<ir::Value*>& inputs = model.inputs();
  if (inputs.empty()) return absl::InvalidArgumentError("the model has no inputs to feed calibration data to");
  if (sources.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no calibration data given for the model's inputs (", InputNames(model), ")"));
  }
  if (max_samples < 0) return absl::InvalidArgumentError(absl::StrCat("max_samples must be >= 0, got ", max_samples));

  // Match sources to inputs.
  std::vector<const DataSource*> by_position(inputs.size(), nullptr);
  for (const DataSource& source : sources) {
    int position = -1;
    if (source.input_name.empty()) {
      if (inputs.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("calibration data '", source.path, "' names no input but the model has ",
                                                       inputs.size(), " (", InputNames(model), "); use name:path"));
      }
      position = 0;
    } else {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i]->name() == source.input_name) position = static_cast<int>(i);
      }
      if (position < 0) {
        return absl::InvalidArgumentError(absl::StrCat("calibration data '", source.path, "': the model has no input '",
                                                       source.input_name, "' (inputs: ", InputNames(model), ")"));
      }
    }
    if (by_position[position] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("two calibration data sources for input '", inputs[position]->name(),
                                                     "': '", by_position[position]->path, "' and '", source.path, "'"));
    }
    by_position[position] = &source;
  }

  std::vector<Feed> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (by_position[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no calibration data for model ", DescribeInput(*inputs[i])));
    }
    Feed feed;
    feed.input = inputs[i];
    feed.position = static_cast<int>(i);
    feed.spec = *by_position[i];
    feed.format = feed.spec.format;
    if (feed.format == DataFormat::kAuto) {
      QFUSE_ASSIGN_OR_RETURN(feed.format, DetectDataFormat(feed.spec.path));
    }
    const ir::Shape& shape = feed.input->type().shape;
    SourceContext context{feed.position, shape.rank_known ? shape.rank() : -1, max_samples};
    QFUSE_ASSIGN_OR_RETURN(feed.source, OpenSampleSource(feed.spec, feed.format, context));
    feeds.push_back(std::move(feed));
  }

  // Every input must provide the same number of samples.
  int64_t size = feeds[0].source->size();
  for (const Feed& feed : feeds) {
    if (feed.source->size() != size) {
      std::vector<std::string> counts;
      for (const Feed& f : feeds) counts.push_back(absl::StrCat(f.input->name(), ": ", f.source->size(), " (", f.spec.path, ")"));
      return absl::InvalidArgumentError(
          absl::StrCat("calibration inputs have different sample counts: ", absl::StrJoin(counts, ", ")));
    }
  }

  int64_t fixed_batch = 0;
  for (Feed& feed : feeds) {
    QFUSE_RETURN_IF_ERROR(Resolve(feed, size));
    if (feed.fixed_batch > 0 && fixed_batch > 0 && feed.fixed_batch != fixed_batch) {
      return absl::InvalidArgumentError(absl::StrCat("model inputs declare different fixed batch sizes (",
                                                     fixed_batch, " and ", feed.fixed_batch, " for '",
                                                     feed.input->name(), "')"));
    }
    if (feed.fixed_batch > 0) fixed_batch = feed.fixed_batch;
  }
  return std::unique_ptr<Dataset>(new MultiSourceDataset(std::move(feeds), size, fixed_batch));
}

}  // namespace qfuse::data
