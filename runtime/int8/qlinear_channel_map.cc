// QLinearChannelMap (int8_ops.h): one 256-byte table per channel of a quantized input, the
// float ops themselves on the channels of a FLOAT input.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/int8/byte_table.h"
#include "runtime/int8/channel_map_row.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/unary_requantization.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/quant/quantize_row.h"

namespace qfuse::runtime::int8 {
namespace {

class QLinearChannelMapKernel : public Kernel {
 public:
  absl::Status Prepare(const ir::Node& node) {
    const int64_t inputs = static_cast<int64_t>(node.inputs().size()) - 2;
    if (inputs < 1 || node.outputs().size() != 1) return absl::InvalidArgumentError("needs x_0.., scale, shift, y");
    const ir::Value* scale = node.input(inputs);
    const ir::Value* shift = node.input(inputs + 1);
    if (scale == nullptr || shift == nullptr || !scale->is_constant() || !shift->is_constant() ||
        scale->initializer()->dtype() != ir::DataType::kFloat32 ||
        shift->initializer()->dtype() != ir::DataType::kFloat32) {
      return absl::InvalidArgumentError("scale and shift must be FLOAT constants");
    }
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "y"));
    QFUSE_ASSIGN_OR_RETURN(const std::string clamp, node.attrs().GetString("clamp", ""));
    if (!clamp.empty() && clamp != "relu" && clamp != "clip") {
      return absl::InvalidArgumentError(absl::StrCat("clamp '", clamp, "' is not relu or clip"));
    }
    // The float Relu and Clip kernels' clamps (ir::ApplyUnitActivation's kRelu and kClip).
    clamp_.activation = clamp == "relu"   ? ir::UnitActivation::kRelu
                        : clamp == "clip" ? ir::UnitActivation::kClip
                                          : ir::UnitActivation::kNone;
    QFUSE_ASSIGN_OR_RETURN(clamp_.clip_min, node.attrs().GetFloat("min", std::numeric_limits<float>::lowest()));
    QFUSE_ASSIGN_OR_RETURN(clamp_.clip_max, node.attrs().GetFloat("max", std::numeric_limits<float>::max()));
    const absl::Span<const float> s = scale->initializer()->values<float>();
    const absl::Span<const float> b = shift->initializer()->values<float>();
    for (int64_t i = 0; i < inputs; ++i) {
      const ir::Value* in = node.input(i);
      const ir::Shape& shape = in->type().shape;
      if (!shape.rank_known || shape.rank() != 4 || !shape.dims[1].is_known()) {
        return absl::InvalidArgumentError(absl::StrCat("x_", i, " must be 4-D with a known channel count"));
      }
      Input input;
      input.channels = shape.dims[1].value;
      input.first = channels_;
      input.quantized = in->type().dtype != ir::DataType::kFloat32;
      if (input.quantized) {
        QFUSE_ASSIGN_OR_RETURN(input.quant, ReadActivationQuant(in, absl::StrCat("x_", i)));
      }
      inputs_.push_back(input);
      channels_ += input.channels;
    }
    if ((s.size() != 1 && static_cast<int64_t>(s.size()) != channels_) ||
        (b.size() != 1 && static_cast<int64_t>(b.size()) != channels_)) {
      return absl::InvalidArgumentError(absl::StrCat("scale and shift need one value or ", channels_));
    }
    for (int64_t c = 0; c < channels_; ++c) {
      scale_.push_back(s[s.size() == 1 ? 0 : c]);
      shift_.push_back(b[b.size() == 1 ? 0 : c]);
    }
    tables_.resize(channels_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      for (int64_t k = 0; k < inputs_[i].channels; ++k) {
        const int64_t c = inputs_[i].first + k;
        input_of_.push_back(static_cast<int64_t>(i));
        if (inputs_[i].quantized) {
          tables_[c] = DequantizedTable(inputs_[i].quant, y_, [&](float v) { return Affine(v, c); });
          rows_.push_back(RowIfItGivesTheTable(inputs_[i].quant, c));
        } else {
          rows_.push_back(std::nullopt);
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, inputs_.size()));
    const Tensor& x0 = *inputs[0];
    if (x0.rank() != 4) return absl::InvalidArgumentError("x_0 must be 4-D");
    const int64_t n = x0.dims()[0], plane = x0.dims()[2] * x0.dims()[3];
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor* x = inputs[i];
      const ir::DataType want = inputs_[i].quantized ? inputs_[i].quant.type : ir::DataType::kFloat32;
      if (x->dtype() != want || x->rank() != 4 || x->dims()[0] != n || x->dims()[1] != inputs_[i].channels ||
          x->dims()[2] != x0.dims()[2] || x->dims()[3] != x0.dims()[3]) {
        return absl::InvalidArgumentError(absl::StrCat("x_", i, " ", ir::DimsToString(x->dims()), " does not fit"));
      }
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0],
                           Tensor::CreateUninitialized(y_.type, {n, channels_, x0.dims()[2], x0.dims()[3]}));
    auto* y = static_cast<uint8_t*>(outputs[0].raw_data());
    // One task per (image, channel) plane.
    ctx.pool->ParallelFor(
        n * channels_, std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(plane, 1)),
        [&](int64_t begin, int64_t end) {
          for (int64_t p = begin; p < end; ++p) {
            const int64_t image = p / channels_, c = p % channels_;
            const Input& in = inputs_[input_of_[c]];
            const int64_t offset = (image * in.channels + c - in.first) * plane;
            if (in.quantized) {
              const uint8_t* x = static_cast<const uint8_t*>(inputs[input_of_[c]]->raw_data()) + offset;
              const int64_t done = rows_[c].has_value() ? ChannelMapRowSimd(*rows_[c], x, plane, y + p * plane) : 0;
              LookupBytes(tables_[c], x + done, plane - done, y + p * plane + done);
            } else {
              FloatPlane(inputs[input_of_[c]]->data<float>() + offset, c, plane, y + p * plane);
            }
          }
        });
    return absl::OkStatus();
  }

 private:
  struct Input {
    int64_t channels = 0, first = 0;  // its channels, and the first one's index in the output
    bool quantized = false;
    ActivationQuant quant;  // quantized inputs
  };

  // Channel c's float steps after the DequantizeLinear: Mul, Add, the clamp, each a float32
  // operation as the float kernels and onnxruntime compute them.
  float Affine(float v, int64_t c) const { return ir::ApplyUnitActivation(clamp_, v * scale_[c] + shift_[c]); }

  // Channel c's steps as a ChannelMapRow, when it gives tables_[c]'s byte for all 256 inputs.
  std::optional<ChannelMapRow> RowIfItGivesTheTable(const ActivationQuant& x, int64_t c) const {
    ChannelMapRow row;
    row.x_signed = x.type == ir::DataType::kInt8;
    row.x_zero_point = x.zero_point;
    row.x_scale = x.scale;
    row.scale = scale_[c];
    row.shift = shift_[c];
    row.clamp = clamp_.activation == ir::UnitActivation::kRelu   ? ChannelMapRow::Clamp::kRelu
                : clamp_.activation == ir::UnitActivation::kClip ? ChannelMapRow::Clamp::kClip
                                                                 : ChannelMapRow::Clamp::kNone;
    row.clip_min = clamp_.clip_min;
    row.clip_max = clamp_.clip_max;
    row.y_signed = y_.type == ir::DataType::kInt8;
    row.y_zero_point = y_.zero_point;
    row.y_scale = y_.scale;
    uint8_t all[256], got[256];
    for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
    if (ChannelMapRowSimd(row, all, 256, got) != 256) return std::nullopt;
    for (int v = 0; v < 256; ++v) {
      if (got[v] != tables_[c][v]) return std::nullopt;
    }
    return row;
  }

  // A FLOAT input's plane of channel c: the same steps on its values.
  void FloatPlane(const float* x, int64_t c, int64_t n, uint8_t* out) const {
    thread_local std::vector<float> v;
    v.resize(n);
    // Affine's steps, the clamp over the whole plane (its switch once, not per value).
    const float s = scale_[c], b = shift_[c];
    for (int64_t i = 0; i < n; ++i) v[i] = x[i] * s + b;
    ir::ApplyUnitActivation(clamp_, absl::MakeSpan(v.data(), n), IsaAllowed(Isa::kAvx2));
    if (y_.type == ir::DataType::kInt8) {
      kernels::quant::QuantizeLinearRow(v.data(), n, y_.scale, y_.zero_point, reinterpret_cast<int8_t*>(out));
    } else {
      kernels::quant::QuantizeLinearRow(v.data(), n, y_.scale, y_.zero_point, out);
    }
  }

  std::vector<Input> inputs_;
  int64_t channels_ = 0;
  std::vector<float> scale_, shift_;  // per output channel
  ir::UnitSpec clamp_;                // kNone, kRelu or kClip
  std::vector<int64_t> input_of_;     // per output channel: the input it comes from
  ActivationQuant y_;
  std::vector<ByteTable> tables_;  // per output channel (quantized inputs' channels)
  // Per output channel: the vector row where it gives the table's bytes (channel_map_row.h).
  std::vector<std::optional<ChannelMapRow>> rows_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearChannelMapKernel(const ir::Node& node) {
  auto k = std::make_unique<QLinearChannelMapKernel>();
  QFUSE_RETURN_IF_ERROR(k->Prepare(node));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace qfuse::runtime::int8
