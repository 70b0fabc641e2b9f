// QLinearAveragePool and QLinearGlobalAveragePool (runtime/int8/int8_ops.h) on per-tensor
// int8/uint8 values: exact int32 window sums, requantized by the output stage that divides by
// the window's count.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/qlinear_kernel_util.h"
#include "runtime/int8/unary_requantization.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;

// AveragePool (ceil_mode 0, no dilations: the lowering only matches those) and
// GlobalAveragePool, which also reads the integer units' channels-last layout directly.
// stages_[n] divides by n.
class QLinearAveragePoolKernel : public Kernel {
 public:
  explicit QLinearAveragePoolKernel(bool global) : global_(global) {}

  bool accepts_layout(int input, LayoutKind kind) const override {
    return kind == LayoutKind::kPlain || (global_ && input == 0 && kind == LayoutKind::kChannelsLast);
  }

  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(mode_, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(x_, ReadActivationQuant(node.input(0), "X"));
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "Y"));
    if (global_) return absl::OkStatus();
    QFUSE_ASSIGN_OR_RETURN(attrs_, kernels::linalg::ParseConvAttrs(node, /*transpose=*/false));
    QFUSE_ASSIGN_OR_RETURN(const int64_t ceil_mode, node.attrs().GetInt("ceil_mode", 0));
    QFUSE_ASSIGN_OR_RETURN(const int64_t include_pad, node.attrs().GetInt("count_include_pad", 0));
    count_include_pad_ = include_pad != 0;
    if (attrs_.kernel_shape.empty() || ceil_mode != 0 || attrs_.kernel_shape.size() > kernels::linalg::kMaxSpatial) {
      return absl::UnimplementedError("integer AveragePool needs kernel_shape (1-3 dims) and ceil_mode 0");
    }
    for (int64_t d : attrs_.dilations) {
      if (d != 1) return absl::UnimplementedError("integer AveragePool does not support dilations");
    }
    int64_t window = 1;
    for (int64_t k : attrs_.kernel_shape) window *= k;
    for (int64_t n = 0; n <= window; ++n) QFUSE_RETURN_IF_ERROR(StageFor(n).status());
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[0], x_, "X"));
    const Tensor& x = *inputs[0];
    if (x.rank() < 3)
      return absl::InvalidArgumentError(absl::StrCat("X ", ir::DimsToString(x.dims()), " has no spatial dims"));
    if (global_) return RunGlobal(ctx, x, outputs);
    const int64_t planes = x.dims()[0] * x.dims()[1];
    if (x.rank() != static_cast<int64_t>(attrs_.kernel_shape.size()) + 2) {
      return absl::InvalidArgumentError(absl::StrCat("X ", ir::DimsToString(x.dims()), " does not match kernel_shape"));
    }
    QFUSE_ASSIGN_OR_RETURN(
        const kernels::linalg::ConvGeometry g,
        kernels::linalg::ResolveConv(attrs_, absl::MakeConstSpan(x.dims()).subspan(2), attrs_.kernel_shape));
    const std::vector<int64_t> out_dims = kernels::linalg::ConvOutputDims(x.dims()[0], x.dims()[1], g,
                                                                          /*image_side=*/false);
    // |sum| <= window * 255 must fit int32.
    if (g.kernel_size() > (int64_t{1} << 23))
      return absl::UnimplementedError("pooling window too large for int32 sums");
    const std::vector<OutputStage>* stages = &stages_;
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(y_.type, out_dims));
    const int64_t in_size = g.image_size(), out_size = g.col_size();
    WithBytes(x, [&](const auto* xd) {
      WithMutableBytes(&outputs[0], [&](auto* yd) {
        using T = std::remove_pointer_t<decltype(yd)>;
        ctx.pool->ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            const auto* in = xd + plane * in_size;
            T* out = yd + plane * out_size;
            for (int64_t o = 0; o < out_size; ++o) {
              const int64_t o2 = o % g.col[2], o1 = (o / g.col[2]) % g.col[1], o0 = o / (g.col[2] * g.col[1]);
              int32_t sum = 0, count = 0;
              for (int64_t t0 = 0; t0 < g.kernel[0]; ++t0) {
                const int64_t i0 = o0 * g.stride[0] - g.pad_begin[0] + t0;
                if (i0 < 0 || i0 >= g.image[0]) continue;
                for (int64_t t1 = 0; t1 < g.kernel[1]; ++t1) {
                  const int64_t i1 = o1 * g.stride[1] - g.pad_begin[1] + t1;
                  if (i1 < 0 || i1 >= g.image[1]) continue;
                  const auto* row = in + (i0 * g.image[1] + i1) * g.image[2];
                  for (int64_t t2 = 0; t2 < g.kernel[2]; ++t2) {
                    const int64_t i2 = o2 * g.stride[2] - g.pad_begin[2] + t2;
                    if (i2 < 0 || i2 >= g.image[2]) continue;
                    sum += row[i2];
                    ++count;
                  }
                }
              }
              sum -= count * x_.zero_point;
              const int64_t divisor = count_include_pad_ ? g.kernel_size() : count;
              out[o] = static_cast<T>((*stages)[divisor].Quantize(sum, 0));
            }
          }
        });
      });
    });
    return absl::OkStatus();
  }

 private:
  // GlobalAveragePool: each channel's exact int32 sum over its H x W values (plain planes,
  // or channels-last images summed pixel by pixel into one sum per channel), centred and
  // requantized by the stage that divides by H x W.
  absl::Status RunGlobal(const KernelContext& ctx, const Tensor& x, absl::Span<Tensor> outputs) {
    const bool channels_last = ctx.input_layouts != nullptr && ctx.input_layouts[0].kind == LayoutKind::kChannelsLast;
    if (channels_last && (x.rank() != 4 || x.dims()[3] != ctx.input_layouts[0].channels)) {
      return absl::InvalidArgumentError(absl::StrCat("channels-last X ", ir::DimsToString(x.dims()), " does not hold ",
                                                     ctx.input_layouts[0].channels, " channels"));
    }
    const std::vector<int64_t> dims = channels_last ? PlainDims(x, ctx.input_layouts[0]) : x.dims();
    const int64_t batch = dims[0], channels = dims[1];
    const int64_t area = x.num_elements() / std::max<int64_t>(batch * channels, 1);
    // |sum| <= area * 255 must fit int32.
    if (area > (int64_t{1} << 23)) return absl::UnimplementedError("pooling window too large for int32 sums");
    QFUSE_ASSIGN_OR_RETURN(const OutputStage* stage, StageFor(area));
    std::vector<int64_t> out_dims = {batch, channels};
    out_dims.resize(dims.size(), 1);
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(y_.type, out_dims));
    const int32_t centre = static_cast<int32_t>(area) * x_.zero_point;
    WithBytes(x, [&](const auto* xd) {
      WithMutableBytes(&outputs[0], [&](auto* yd) {
        using T = std::remove_pointer_t<decltype(yd)>;
        if (channels_last) {
          // Tasks of one image's block of kChannelBlock channels, summed pixel by pixel.
          constexpr int64_t kChannelBlock = 64;
          const int64_t blocks = (channels + kChannelBlock - 1) / kChannelBlock;
          ctx.pool->ParallelFor(batch * blocks, 1, [&](int64_t begin, int64_t end) {
            int32_t sums[kChannelBlock];
            for (int64_t task = begin; task < end; ++task) {
              const int64_t n = task / blocks, c0 = (task % blocks) * kChannelBlock;
              const int64_t width = std::min(kChannelBlock, channels - c0);
              std::fill(sums, sums + width, 0);
              const auto* image = xd + n * area * channels + c0;
              for (int64_t p = 0; p < area; ++p) {
                for (int64_t c = 0; c < width; ++c) sums[c] += image[p * channels + c];
              }
              for (int64_t c = 0; c < width; ++c) {
                yd[n * channels + c0 + c] = static_cast<T>(stage->Quantize(sums[c] - centre, 0));
              }
            }
          });
          return;
        }
        const int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(area, 1));
        ctx.pool->ParallelFor(batch * channels, grain, [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            const auto* in = xd + plane * area;
            int32_t sum = 0;
            for (int64_t i = 0; i < area; ++i) sum += in[i];
            yd[plane] = static_cast<T>(stage->Quantize(sum - centre, 0));
          }
        });
      });
    });
    return absl::OkStatus();
  }

  // stages_[n] for divisor n (created on first use; n = 0 maps to 1 and is never used).
  absl::StatusOr<const OutputStage*> StageFor(int64_t n) {
    while (static_cast<int64_t>(stages_.size()) <= n) {
      const int64_t d = std::max<int64_t>(1, static_cast<int64_t>(stages_.size()));
      OutputStage s;
      if (global_ && mode_ == numerics::RequantizeMode::kOnnx) {
        // onnxruntime's multiplier sx / (sy * d) (numerics::OnnxGlobalPoolMultiplier): a stage
        // over the output scale sy * d, whose multiplier OnnxMultiplier(sx, 1, sy * d) is
        // exactly that (sx * 1 is exact; numerics' test checks the identity). Only Quantize(sum) is used, which reads
        // nothing else of the output scale (the pool has no activation bounds).
        ActivationQuant pooled = y_;
        pooled.scale = numerics::OnnxGlobalPoolDenominator(y_.scale, d);
        QFUSE_ASSIGN_OR_RETURN(s, SingleTermStage(mode_, x_, pooled, 1.f));
      } else {
        QFUSE_ASSIGN_OR_RETURN(s, SingleTermStage(mode_, x_, y_, 1.f / static_cast<float>(d)));
      }
      stages_.push_back(std::move(s));
    }
    return &stages_[n];
  }

  const bool global_;
  numerics::RequantizeMode mode_ = numerics::RequantizeMode::kOnnx;
  ActivationQuant x_, y_;
  kernels::linalg::ConvAttrs attrs_;
  bool count_include_pad_ = false;
  std::vector<OutputStage> stages_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAveragePoolKernel(const ir::Node& node) {
  return MakePrepared<QLinearAveragePoolKernel>(node, node.op_type() == kQLinearGlobalAveragePoolOp);
}

}  // namespace qfuse::runtime::int8
