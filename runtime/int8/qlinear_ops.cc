// QLinearAdd, QLinearMul, QLinearClamp, QLinearAveragePool, QLinearGlobalAveragePool and
// QLinearConcat (runtime/int8/int8_ops.h), elementwise over per-tensor int8/uint8 values.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/int8/byte_table.h"
#include "runtime/int8/qlinear_add_row.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/unary_requantization.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernels/elementwise/broadcast.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/conv_geometry.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;

// Elements per parallel chunk of the elementwise kernels.
constexpr int64_t kElementwiseChunk = 1 << 14;
// Broadcast runs at least this long with one operand fixed use a 256-entry byte table.
constexpr int64_t kByteTableRun = 64;

// Calls fn(p) with p the typed data pointer of an INT8 or UINT8 tensor.
template <typename Fn>
void WithBytes(const Tensor& t, Fn&& fn) {
  if (t.dtype() == DataType::kInt8) {
    fn(t.data<int8_t>());
  } else {
    fn(t.data<uint8_t>());
  }
}
template <typename Fn>
void WithMutableBytes(Tensor* t, Fn&& fn) {
  if (t->dtype() == DataType::kInt8) {
    fn(t->data<int8_t>());
  } else {
    fn(t->data<uint8_t>());
  }
}

absl::Status CheckType(const Tensor* t, const ActivationQuant& q, const char* what) {
  if (t == nullptr || t->dtype() != q.type) {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be ", ir::DataTypeName(q.type)));
  }
  return absl::OkStatus();
}

// QLinearAdd and QLinearMul: two int8/uint8 inputs, numpy broadcasting, one 64 KiB table of
// output bytes.
enum class BinaryOp { kAdd, kMul };

class QLinearBinaryKernel : public Kernel {
 public:
  explicit QLinearBinaryKernel(BinaryOp op) : op_(op) {}
  bool elementwise() const override { return true; }
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(mode_, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(a_, ReadActivationQuant(node.input(0), "A"));
    QFUSE_ASSIGN_OR_RETURN(b_, ReadActivationQuant(node.input(1), "B"));
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "C"));
    out_type_ = y_.type;
    // A folded clamp: the table computes the clamp's input (y_), then maps it to C's bytes.
    QFUSE_ASSIGN_OR_RETURN(const std::optional<FoldedClamp> folded, ReadFoldedClamp(node));
    std::optional<ByteTable> clamp;
    const ActivationQuant clamp_out = y_;
    if (folded.has_value()) {
      QFUSE_ASSIGN_OR_RETURN(clamp, ClampTable(mode_, folded->stage, y_, folded->min, folded->max));
      y_ = folded->stage;
    }
    OutputStageSpec spec;
    spec.mode = mode_;
    spec.output_type = y_.type;
    spec.output_scale = y_.scale;
    spec.output_zero_point = y_.zero_point;
    if (op_ == BinaryOp::kAdd) {
      spec.a.input_scale = a_.scale;
      spec.has_b = true;
      spec.b.input_scale = b_.scale;
    } else {  // one term: the product (a - zp_a)(b - zp_b) at scale s_a * s_b
      spec.a.input_scale = a_.scale;
      spec.a.weight_scales = {b_.scale};
    }
    QFUSE_ASSIGN_OR_RETURN(stage_, OutputStage::Create(spec));
    table_ = BuildTable(/*scalar_a=*/false);
    // Only onnxruntime's Add formula depends on the operand order.
    if (op_ == BinaryOp::kAdd && mode_ == numerics::RequantizeMode::kOnnx) {
      scalar_a_table_ = BuildTable(/*scalar_a=*/true);
    }
    if (clamp.has_value()) {
      for (uint8_t& v : table_) v = (*clamp)[v];
      for (uint8_t& v : scalar_a_table_) v = (*clamp)[v];
      clamp_ = *clamp;
    }
    if (op_ == BinaryOp::kAdd && mode_ == numerics::RequantizeMode::kOnnx) {
      std::optional<OnnxAddRow::Clamp> arithmetic_clamp;
      if (folded.has_value()) {
        OnnxAddRow::Clamp c;
        c.in_scale = y_.scale;
        c.in_zero_point = y_.zero_point;
        c.lo = folded->min;
        c.hi = folded->max;
        c.out_scale = clamp_out.scale;
        c.out_zero_point = clamp_out.zero_point;
        c.out_min = clamp_out.type == DataType::kInt8 ? -128 : 0;
        c.out_max = clamp_out.type == DataType::kInt8 ? 127 : 255;
        arithmetic_clamp = c;
      }
      UseAddRowIfItGivesTheTable(arithmetic_clamp);
    }
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 2));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[0], a_, "A"));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[1], b_, "B"));
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const uint8_t* ad = static_cast<const uint8_t*>(a.raw_data());
    const uint8_t* bd = static_cast<const uint8_t*>(b.raw_data());
    if (a.dims() == b.dims()) {
      QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, a.dims()));
      uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
      const uint8_t* table = table_.data();
      ctx.pool->ParallelFor(a.num_elements(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
        if (add_row_.has_value()) {  // the same bytes as the table (checked at Prepare)
          const int64_t done = OnnxQLinearAddRowAvx2(*add_row_, ad + begin, bd + begin, end - begin, yd + begin);
          if (clamp_.has_value() && !add_row_->clamp.has_value()) LookupBytes(*clamp_, yd + begin, done, yd + begin);
          begin += done;
        }
        // Local restrict pointers: through the captures, every byte stored would make the
        // compiler reload them.
        const uint8_t* __restrict x0 = ad;
        const uint8_t* __restrict x1 = bd;
        const uint8_t* __restrict t = table;
        uint8_t* __restrict y = yd;
        for (int64_t i = begin; i < end; ++i) y[i] = t[(x0[i] << 8) | x1[i]];
      });
      return absl::OkStatus();
    }
    // numpy broadcasting: along a run where a is one value and b varies, onnxruntime swaps the
    // operands (numerics/requantize.h), hence the second table.
    QFUSE_ASSIGN_OR_RETURN(const kernels::BroadcastPlan plan, kernels::MakeBroadcastPlan(a.dims(), b.dims()));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, plan.out_dims));
    uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
    ctx.pool->ParallelFor(plan.num_elements, kElementwiseChunk, [&](int64_t begin, int64_t end) {
      kernels::ForEachRun(plan, begin, end, [&](int64_t o, int64_t ia, int64_t ib, int64_t n) {
        const bool swapped = plan.a_step == 0 && plan.b_step == 1 && !scalar_a_table_.empty();
        const uint8_t* table = swapped ? scalar_a_table_.data() : table_.data();
        if (n >= kByteTableRun && plan.a_step + plan.b_step == 1) {
          // One operand is one byte along the run (a squeeze-excitation scale over a plane):
          // the table's 256 entries for that byte, looked up 16 at a time (byte_table.h).
          ByteTable row;
          if (plan.b_step == 0) {
            for (int v = 0; v < 256; ++v) row[v] = table[(v << 8) | bd[ib]];
            LookupBytes(row, ad + ia, n, yd + o);
          } else {
            std::memcpy(row.data(), table + (ad[ia] << 8), row.size());
            LookupBytes(row, bd + ib, n, yd + o);
          }
          return;
        }
        for (int64_t i = 0; i < n; ++i) {
          yd[o + i] = table[(ad[ia + i * plan.a_step] << 8) | bd[ib + i * plan.b_step]];
        }
      });
    });
    return absl::OkStatus();
  }

 private:
  // table[(raw byte of a) << 8 | raw byte of b] = the output byte. Both inputs are bytes, so a
  // 64 KiB table gives the same bytes as the arithmetic per element: kOnnx is onnxruntime's
  // QLinearAdd / QLinearMul (numerics::OnnxQLinearAdd / OnnxQLinearMul), kFixed the output stage
  // of the two terms (Add) or of the product (Mul).
  // Sets add_row_ when the AVX2 row gives table_'s byte for every one of the 65536 input
  // pairs: with a folded clamp, first with the clamp's arithmetic in the row, else with its
  // table after the row; otherwise the table runs alone.
  void UseAddRowIfItGivesTheTable(const std::optional<OnnxAddRow::Clamp>& arithmetic_clamp) {
    OnnxAddRow row;
    row.m = numerics::OnnxQLinearAddMultipliers(a_.scale, a_.zero_point, b_.scale, b_.zero_point, y_.scale,
                                                y_.zero_point);
    row.a_signed = a_.type == DataType::kInt8;
    row.b_signed = b_.type == DataType::kInt8;
    row.qmin = y_.type == DataType::kInt8 ? -128 : 0;
    row.qmax = y_.type == DataType::kInt8 ? 127 : 255;
    std::vector<uint8_t> a(1 << 16), b(1 << 16), y(1 << 16);
    for (int i = 0; i < (1 << 16); ++i) {
      a[i] = static_cast<uint8_t>(i >> 8);
      b[i] = static_cast<uint8_t>(i & 255);
    }
    if (arithmetic_clamp.has_value()) {
      row.clamp = arithmetic_clamp;
      if (OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()) == (1 << 16) && y == table_) {
        add_row_ = row;
        return;
      }
      row.clamp.reset();
    }
    if (OnnxQLinearAddRowAvx2(row, a.data(), b.data(), 1 << 16, y.data()) != (1 << 16)) return;
    if (clamp_.has_value()) LookupBytes(*clamp_, y.data(), 1 << 16, y.data());
    if (y == table_) add_row_ = row;
  }

  std::vector<uint8_t> BuildTable(bool scalar_a) const {
    std::vector<uint8_t> table(1 << 16);
    const numerics::OnnxAddMultipliers m =
        numerics::OnnxQLinearAddMultipliers(a_.scale, a_.zero_point, b_.scale, b_.zero_point, y_.scale, y_.zero_point);
    const float mul_ratio = numerics::OnnxQLinearMulRatio(a_.scale, b_.scale, y_.scale);
    const int32_t qmin = y_.type == DataType::kInt8 ? -128 : 0, qmax = y_.type == DataType::kInt8 ? 127 : 255;
    for (int ra = 0; ra < 256; ++ra) {
      for (int rb = 0; rb < 256; ++rb) {
        const int32_t av = a_.type == DataType::kInt8 ? static_cast<int8_t>(ra) : ra;
        const int32_t bv = b_.type == DataType::kInt8 ? static_cast<int8_t>(rb) : rb;
        int32_t q;
        if (op_ == BinaryOp::kMul) {
          q = mode_ == numerics::RequantizeMode::kOnnx
                  ? numerics::OnnxQLinearMul(av, a_.zero_point, bv, b_.zero_point, mul_ratio, y_.zero_point, qmin, qmax)
                  : stage_.Quantize((av - a_.zero_point) * (bv - b_.zero_point), 0);
        } else {
          q = mode_ == numerics::RequantizeMode::kOnnx ? numerics::OnnxQLinearAdd(av, bv, m, scalar_a, qmin, qmax)
                                                       : stage_.Quantize(av - a_.zero_point, bv - b_.zero_point, 0);
        }
        table[(ra << 8) | rb] = static_cast<uint8_t>(q);
      }
    }
    return table;
  }

  BinaryOp op_;
  numerics::RequantizeMode mode_ = numerics::RequantizeMode::kOnnx;
  ActivationQuant a_, b_, y_;  // y_: the arithmetic's output (a folded clamp's input)
  ir::DataType out_type_ = DataType::kInt8;
  OutputStage stage_;
  std::vector<uint8_t> table_;
  std::vector<uint8_t> scalar_a_table_;  // mode kOnnx only: A broadcast along a run of B
  std::optional<ByteTable> clamp_;        // a folded clamp's map, also in table_
  // Add in mode kOnnx where it gives table_ (AVX2); with `clamp` set it computes the folded
  // clamp too, else clamp_'s map runs after it.
  std::optional<OnnxAddRow> add_row_;
};

// QLinearClamp and QLinearActivation: one byte table per node.
class QLinearClampKernel : public Kernel {
 public:
  bool elementwise() const override { return true; }
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(const numerics::RequantizeMode mode, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(x_, ReadActivationQuant(node.input(0), "X"));
    QFUSE_ASSIGN_OR_RETURN(const ActivationQuant y, ReadActivationQuant(node.output(0), "Y"));
    out_type_ = y.type;
    if (node.op_type() == kQLinearActivationOp) {
      QFUSE_ASSIGN_OR_RETURN(const ir::UnitSpec activation, ir::ReadUnitActivation(node));
      table_ = ActivationTable(x_, y, activation);
      return absl::OkStatus();
    }
    QFUSE_ASSIGN_OR_RETURN(const float lo, node.attrs().GetFloat("min", std::numeric_limits<float>::lowest()));
    QFUSE_ASSIGN_OR_RETURN(const float hi, node.attrs().GetFloat("max", std::numeric_limits<float>::max()));
    QFUSE_ASSIGN_OR_RETURN(table_, ClampTable(mode, x_, y, lo, hi));
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    QFUSE_RETURN_IF_ERROR(CheckType(inputs[0], x_, "X"));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type_, x.dims()));
    const uint8_t* xd = static_cast<const uint8_t*>(x.raw_data());
    uint8_t* yd = static_cast<uint8_t*>(outputs[0].raw_data());
    ctx.pool->ParallelFor(x.num_elements(), kElementwiseChunk, [&](int64_t begin, int64_t end) {
      LookupBytes(table_, xd + begin, end - begin, yd + begin);
    });
    return absl::OkStatus();
  }

 private:
  ActivationQuant x_;
  ir::DataType out_type_ = DataType::kInt8;
  ByteTable table_{};  // raw input byte -> output byte (ClampTable, or ActivationTable)
};

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
    if (x.rank() < 3) return absl::InvalidArgumentError(absl::StrCat("X ", ir::DimsToString(x.dims()), " has no spatial dims"));
    if (global_) return RunGlobal(ctx, x, outputs);
    const int64_t planes = x.dims()[0] * x.dims()[1];
    if (x.rank() != static_cast<int64_t>(attrs_.kernel_shape.size()) + 2) {
      return absl::InvalidArgumentError(absl::StrCat("X ", ir::DimsToString(x.dims()), " does not match kernel_shape"));
    }
    QFUSE_ASSIGN_OR_RETURN(const kernels::linalg::ConvGeometry g,
                           kernels::linalg::ResolveConv(attrs_, absl::MakeConstSpan(x.dims()).subspan(2),
                                                        attrs_.kernel_shape));
    const std::vector<int64_t> out_dims = kernels::linalg::ConvOutputDims(x.dims()[0], x.dims()[1], g,
                                                                          /*image_side=*/false);
    // |sum| <= window * 255 must fit int32.
    if (g.kernel_size() > (int64_t{1} << 23)) return absl::UnimplementedError("pooling window too large for int32 sums");
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
        // exactly that (sx * 1 is exact; numerics' test checks the identity). Only Quantize(sum) is used, which reads nothing else
        // of the output scale (the pool has no activation bounds).
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

class QLinearConcatKernel : public Kernel {
 public:
  absl::Status Prepare(const ir::Node& node) {
    QFUSE_ASSIGN_OR_RETURN(const numerics::RequantizeMode mode, ReadRequantizeMode(node));
    QFUSE_ASSIGN_OR_RETURN(axis_, node.attrs().GetInt("axis", 0));
    QFUSE_ASSIGN_OR_RETURN(y_, ReadActivationQuant(node.output(0), "output"));
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      QFUSE_ASSIGN_OR_RETURN(ActivationQuant in, ReadActivationQuant(node.input(i), absl::StrCat("input ", i)));
      copy_.push_back(in.type == y_.type && in.scale == y_.scale && in.zero_point == y_.zero_point);
      in_.push_back(in);
      QFUSE_ASSIGN_OR_RETURN(ByteTable table,
                             ClampTable(mode, in, y_, std::numeric_limits<float>::lowest(),
                                        std::numeric_limits<float>::max()));
      tables_.push_back(table);
    }
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, in_.size()));
    const Tensor& first = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, kernels::NormalizeAxis(axis_, first.rank()));
    std::vector<int64_t> out_dims = first.dims();
    out_dims[axis] = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      QFUSE_RETURN_IF_ERROR(CheckType(inputs[i], in_[i], "input"));
      const Tensor& t = *inputs[i];
      bool ok = t.rank() == first.rank();
      for (int64_t d = 0; ok && d < t.rank(); ++d) ok = d == axis || t.dims()[d] == first.dims()[d];
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, " ", ir::DimsToString(t.dims()), " does not match ",
                                                       ir::DimsToString(first.dims()), " outside axis ", axis));
      }
      out_dims[axis] += t.dims()[axis];
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(y_.type, out_dims));
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_dims[d];
    const int64_t out_block = outer > 0 ? outputs[0].num_elements() / outer : 0;
    int64_t offset = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      const Tensor& t = *inputs[i];
      const int64_t block = outer > 0 ? t.num_elements() / outer : 0;
      WithBytes(t, [&](const auto* xd) {
        WithMutableBytes(&outputs[0], [&](auto* yd) {
          using T = std::remove_pointer_t<decltype(yd)>;
          ctx.pool->ParallelFor(outer, std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(block, 1)),
                                [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o) {
              const auto* src = xd + o * block;
              T* dst = yd + o * out_block + offset;
              if (copy_[i]) {
                std::memcpy(dst, src, block);
              } else {
                LookupBytes(tables_[i], reinterpret_cast<const uint8_t*>(src), block, reinterpret_cast<uint8_t*>(dst));
              }
            }
          });
        });
      });
      offset += block;
    }
    return absl::OkStatus();
  }

 private:
  int64_t axis_ = 0;
  ActivationQuant y_;
  std::vector<ActivationQuant> in_;
  std::vector<ByteTable> tables_;  // per input: raw byte -> output byte (ClampTable)
  std::vector<bool> copy_;
};

template <typename K, typename... Args>
absl::StatusOr<std::unique_ptr<Kernel>> Make(const ir::Node& node, Args... args) {
  auto k = std::make_unique<K>(args...);
  QFUSE_RETURN_IF_ERROR(k->Prepare(node));
  return std::unique_ptr<Kernel>(std::move(k));
}

}  // namespace

const char* RequantizeModeName(numerics::RequantizeMode mode) {
  return mode == numerics::RequantizeMode::kFixed ? "fixed" : "onnx";
}

absl::StatusOr<numerics::RequantizeMode> ReadRequantizeMode(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(const std::string mode, node.attrs().GetString(kRequantizeModeAttr, "onnx"));
  if (mode == "onnx") return numerics::RequantizeMode::kOnnx;
  if (mode == "fixed") return numerics::RequantizeMode::kFixed;
  return absl::InvalidArgumentError(absl::StrCat(kRequantizeModeAttr, " is '", mode, "'; expected onnx or fixed"));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAddKernel(const ir::Node& node) {
  return Make<QLinearBinaryKernel>(node, BinaryOp::kAdd);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearMulKernel(const ir::Node& node) {
  return Make<QLinearBinaryKernel>(node, BinaryOp::kMul);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearClampKernel(const ir::Node& node) {
  return Make<QLinearClampKernel>(node);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearActivationKernel(const ir::Node& node) {
  return Make<QLinearClampKernel>(node);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearAveragePoolKernel(const ir::Node& node) {
  return Make<QLinearAveragePoolKernel>(node, node.op_type() == kQLinearGlobalAveragePoolOp);
}
absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearConcatKernel(const ir::Node& node) {
  return Make<QLinearConcatKernel>(node);
}

}  // namespace qfuse::runtime::int8
