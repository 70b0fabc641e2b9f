#include "quant/weight_quantizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace qfuse::quant {
namespace {

constexpr double kInt32Limit = 2147483647.0;

// Weight element (o, c, i) of a tensor viewed as [outer, channels, inner].
struct ChannelView {
  int64_t outer = 1, channels = 1, inner = 1;
};

ChannelView ViewAlong(const ir::Tensor& t, int64_t axis) {
  ChannelView v;
  if (axis < 0) {
    v.inner = t.num_elements();
    return v;
  }
  for (int64_t d = 0; d < axis; ++d) v.outer *= t.dims()[d];
  v.channels = t.dims()[axis];
  for (int64_t d = axis + 1; d < t.rank(); ++d) v.inner *= t.dims()[d];
  return v;
}

}  // namespace

double WideningCostDb(double factor) { return 20.0 * std::log10(factor); }

absl::StatusOr<QuantizedWeights> QuantizeWeightsAndBias(const WeightQuantizeRequest& request) {
  const ir::Tensor& w = *request.weights;
  if (w.dtype() != ir::DataType::kFloat32) return absl::InvalidArgumentError("weights are not FLOAT");
  if (!(request.input_scale > 0) || !std::isfinite(request.input_scale)) {
    return absl::InvalidArgumentError(absl::StrCat("input scale ", request.input_scale, " is not positive"));
  }
  const int64_t axis = request.per_channel ? request.channel_axis : -1;
  if (axis >= w.rank()) return absl::InvalidArgumentError("channel axis out of range");
  const ChannelView view = ViewAlong(w, axis);
  const double max_q = MaxAbsQuantizedWeight(request.reduce_range);
  const float* wd = w.data<float>();
  std::vector<double> max_abs(view.channels, 0.0);
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t c = 0; c < view.channels; ++c) {
      const float* row = wd + (o * view.channels + c) * view.inner;
      for (int64_t i = 0; i < view.inner; ++i) max_abs[c] = std::max(max_abs[c], std::fabs(static_cast<double>(row[i])));
    }
  }
  QuantizedWeights out;
  out.axis = std::max<int64_t>(axis, 0);
  out.weight_scales = ir::Tensor(ir::DataType::kFloat32, {view.channels});
  float* scales = out.weight_scales.data<float>();
  for (int64_t c = 0; c < view.channels; ++c) {
    scales[c] = max_abs[c] > 0 ? std::max(static_cast<float>(max_abs[c] / max_q), kMinWeightScale) : 1.f;
  }

  const double products = static_cast<double>(request.num_products) * request.max_abs_input * max_q;
  const double bias_budget = kInt32Limit - 1 - products;
  if (!(bias_budget > 0)) {  // the products alone can overflow: no scale helps
    out.max_widening = std::numeric_limits<double>::infinity();
    out.widened_output_error = std::numeric_limits<double>::infinity();
    return out;
  }
  if (request.bias != nullptr) {
    const ir::Tensor& b = *request.bias;
    if (b.dtype() != ir::DataType::kFloat32) return absl::InvalidArgumentError("bias is not FLOAT");
    if (view.channels > 1 && b.num_elements() != view.channels) {
      return absl::InvalidArgumentError(absl::StrCat("bias has ", b.num_elements(), " values for ", view.channels,
                                                     " weight channels"));
    }
    const float* bd = b.data<float>();
    for (int64_t i = 0; i < b.num_elements(); ++i) {
      if (!std::isfinite(bd[i])) {  // no scale holds it: the caller keeps the layer float
        out.max_widening = std::numeric_limits<double>::infinity();
        out.widened_output_error = std::numeric_limits<double>::infinity();
        return out;
      }
    }
    const std::vector<float> max_abs_scales(scales, scales + view.channels);
    const int64_t n_bias_scales = view.channels > 1 ? b.num_elements() : 1;
    // The bias quantized at the float32 bias scale s_x * s_w the graph will carry.
    const auto bias_q = [&](int64_t i) {
      const double s = static_cast<float>(request.input_scale * scales[n_bias_scales > 1 ? i : 0]);
      return std::nearbyint(static_cast<double>(bd[i]) / s);
    };
    // Widen a channel's weight scale until its bias fits in what the products leave of int32
    // (judged with the float32 bias scale, which may round below the double product).
    for (int64_t i = 0; i < b.num_elements(); ++i) {
      const int64_t c = view.channels > 1 ? i : 0;
      const double needed =
          std::fabs(static_cast<double>(bd[i])) / (static_cast<double>(request.input_scale) * bias_budget);
      if (needed > scales[c] || std::fabs(bias_q(i)) > bias_budget) {
        double widened = std::max<double>(needed, scales[c]) * (1.0 + 1e-6);
        scales[c] = static_cast<float>(widened);
        while (std::fabs(bias_q(i)) > bias_budget) scales[c] = std::nextafter(scales[c], HUGE_VALF);
        ++out.widened_channels;
      }
    }
    // What the widening costs: per channel, the bound on the widened weights' output error
    // relative to the channel's bias; with one scale for the whole tensor (per-tensor weights)
    // every output shares it, so every output is judged, those with a small bias too (a zero
    // bias: no bound, the layer stays float).
    for (int64_t c = 0; c < view.channels; ++c) {
      if (scales[c] == max_abs_scales[c]) continue;
      out.max_widening = std::max(out.max_widening, static_cast<double>(scales[c]) / max_abs_scales[c]);
      for (int64_t i = 0; i < b.num_elements(); ++i) {
        if (view.channels > 1 && i != c) continue;
        // K products, each off by at most half a step times max|x - zp| input steps.
        const double error = static_cast<double>(request.num_products) * request.max_abs_input * 0.5 *
                             static_cast<double>(scales[c]) * request.input_scale /
                             std::fabs(static_cast<double>(bd[i]));
        out.widened_output_error =
            std::max(out.widened_output_error, std::isnan(error) ? std::numeric_limits<double>::infinity() : error);
      }
    }
    out.bias = ir::Tensor(ir::DataType::kInt32, {b.num_elements()});
    out.bias_scales = ir::Tensor(ir::DataType::kFloat32, {n_bias_scales});
    for (int64_t i = 0; i < n_bias_scales; ++i) out.bias_scales.data<float>()[i] = request.input_scale * scales[i];
    for (int64_t i = 0; i < b.num_elements(); ++i) {
      out.bias.data<int32_t>()[i] = static_cast<int32_t>(std::clamp(bias_q(i), -kInt32Limit, kInt32Limit));
    }
  }

  out.weights = ir::Tensor(ir::DataType::kInt8, w.dims());
  int8_t* q = out.weights.data<int8_t>();
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t c = 0; c < view.channels; ++c) {
      const int64_t base = (o * view.channels + c) * view.inner;
      const double s = scales[c];
      for (int64_t i = 0; i < view.inner; ++i) {
        q[base + i] = static_cast<int8_t>(std::clamp(std::nearbyint(wd[base + i] / s), -max_q, max_q));
      }
    }
  }
  return out;
}

}  // namespace qfuse::quant
