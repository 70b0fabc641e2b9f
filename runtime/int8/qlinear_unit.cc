// QLinearUnit: Conv (any group; a direct loop for depthwise), Gemm and MatMul with
// constant int8 weights packed once at Prepare, int32 bias, residual and activation in
// one output stage (runtime/int8/output_stage.h): a clamp activation (Relu, Clip) as the
// stage's bounds, a non-linear one (HardSwish, Sigmoid, SiLU, ...) through the stage's
// float epilogue (dequantize, ir::ApplyUnitActivation, QuantizeLinear) in both modes.
//   Conv: each (image, group, block of 64 output pixels) is an im2col of int8/uint8 rows
//   (padding filled with zp_x, so it contributes 0) times B_g[K, Cout/group] with the
//   int8 GEMM (kernels::quant::ForEachConvTile); depthwise convs (Cin/group == 1 == Cout/group) accumulate
//   (x - zp_x) * (w - zp_w) per tap in int32 directly. Gemm / MatMul: rows of x times
//   B[K, N] in blocks of 32 rows. Work items run in parallel on the executor's pool.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/grow_buffer.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/cpu_isa.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/output_stage.h"
#include "runtime/int8/unit_requantization.h"
#include "runtime/int8/value_params.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/conv_tiles.h"
#include "runtime/kernels/quant/quant_util.h"

namespace qfuse::runtime::int8 {
namespace {

using ir::DataType;
using kernels::linalg::ConvAttrs;
using kernels::linalg::ConvGeometry;
using kernels::quant::PreparedWeights;

// Rows of a MatMul / Gemm unit per task: three of the int8 GEMM's 12-row VNNI tiles (int8_gemm.cc;
// 32 left an 8-row tile in every task).
constexpr int64_t kRowsPerTask = 36;

// acc[col] = sum_tap (image[pos(col, tap)] - zp) * w[tap] over in-image taps (one channel).
template <typename X>
void DepthwiseAccumulate(const ConvGeometry& g, const X* image, int32_t zp, const int32_t* w, int32_t* acc) {
  const int64_t out2 = g.col[2], s2 = g.stride[2];
  std::fill(acc, acc + g.col_size(), 0);
  for (int64_t o0 = 0; o0 < g.col[0]; ++o0) {
    for (int64_t o1 = 0; o1 < g.col[1]; ++o1) {
      int32_t* row = acc + (o0 * g.col[1] + o1) * out2;
      for (int64_t t0 = 0; t0 < g.kernel[0]; ++t0) {
        const int64_t i0 = o0 * g.stride[0] - g.pad_begin[0] + t0 * g.dilation[0];
        if (i0 < 0 || i0 >= g.image[0]) continue;
        for (int64_t t1 = 0; t1 < g.kernel[1]; ++t1) {
          const int64_t i1 = o1 * g.stride[1] - g.pad_begin[1] + t1 * g.dilation[1];
          if (i1 < 0 || i1 >= g.image[1]) continue;
          const X* in = image + (i0 * g.image[1] + i1) * g.image[2];
          for (int64_t t2 = 0; t2 < g.kernel[2]; ++t2) {
            const int32_t wv = w[(t0 * g.kernel[1] + t1) * g.kernel[2] + t2];
            const int64_t off = t2 * g.dilation[2] - g.pad_begin[2];  // i2 = o2 * s2 + off
            const int64_t lo = off >= 0 ? 0 : (-off + s2 - 1) / s2;
            const int64_t hi = g.image[2] - 1 - off < 0 ? 0 : std::min(out2, (g.image[2] - 1 - off) / s2 + 1);
            if (s2 == 1) {
              const X* src = in + off;
              for (int64_t o2 = lo; o2 < hi; ++o2) row[o2] += (static_cast<int32_t>(src[o2]) - zp) * wv;
            } else {
              for (int64_t o2 = lo; o2 < hi; ++o2) row[o2] += (static_cast<int32_t>(in[o2 * s2 + off]) - zp) * wv;
            }
          }
        }
      }
    }
  }
}

// DepthwiseAccumulate for 2-D convs without dilation: the channel is first centred into a
// zero-padded int16 plane, so every tap is a bounds-free row loop.
template <typename X>
void DepthwiseAccumulate2d(const ConvGeometry& g, const X* image, int32_t zp, const int32_t* w, int32_t* acc) {
  const int64_t kh = g.kernel[1], kw = g.kernel[2], sh = g.stride[1], sw = g.stride[2];
  const int64_t oh = g.col[1], ow = g.col[2], ih = g.image[1], iw = g.image[2];
  const int64_t ph = g.pad_begin[1], pw = g.pad_begin[2];
  const int64_t hp = std::max(ih + ph, (oh - 1) * sh + kh), wp = std::max(iw + pw, (ow - 1) * sw + kw);
  thread_local std::vector<int16_t> plane;
  plane.assign(hp * wp, 0);
  for (int64_t i = 0; i < ih; ++i) {
    int16_t* dst = plane.data() + (i + ph) * wp + pw;
    const X* src = image + i * iw;
    for (int64_t j = 0; j < iw; ++j) dst[j] = static_cast<int16_t>(src[j] - zp);
  }
  for (int64_t o = 0; o < oh; ++o) {
    int32_t* row = acc + o * ow;
    std::fill(row, row + ow, 0);
    for (int64_t t0 = 0; t0 < kh; ++t0) {
      const int16_t* in = plane.data() + (o * sh + t0) * wp;
      for (int64_t t1 = 0; t1 < kw; ++t1) {
        const int32_t wv = w[t0 * kw + t1];
        const int16_t* src = in + t1;
        if (sw == 1) {
          for (int64_t j = 0; j < ow; ++j) row[j] += src[j] * wv;
        } else {
          for (int64_t j = 0; j < ow; ++j) row[j] += src[j * sw] * wv;
        }
      }
    }
  }
}

class QLinearUnitKernel : public Kernel {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(const ir::Node& node) {
    auto k = std::unique_ptr<QLinearUnitKernel>(new QLinearUnitKernel());
    QFUSE_RETURN_IF_ERROR(k->Prepare(node));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    const Tensor* x = inputs.empty() ? nullptr : inputs[0];
    if (x == nullptr || x->dtype() != x_.type) {
      return absl::InvalidArgumentError(absl::StrCat("x must be ", ir::DataTypeName(x_.type)));
    }
    const Tensor* r = inputs.size() > ir::kUnitResidual ? inputs[ir::kUnitResidual] : nullptr;
    if (r_.has_value() && (r == nullptr || r->dtype() != r_->type)) {
      return absl::InvalidArgumentError(absl::StrCat("residual must be ", ir::DataTypeName(r_->type)));
    }
    if (base_ == ir::UnitBaseOp::kConv) return RunConv(ctx, *x, r, &outputs[0]);
    return RunGemm(ctx, *x, r, &outputs[0]);
  }

 private:
  QLinearUnitKernel() = default;

  absl::Status Prepare(const ir::Node& node) {
    name_ = node.Describe();
    QFUSE_ASSIGN_OR_RETURN(UnitRequantization u, ReadUnitRequantization(node));
    spec_ = u.spec;
    float_epilogue_ = u.float_epilogue;
    matmul_to_float_ = u.matmul_to_float;
    dequant_scales_ = std::move(u.dequant_scales);
    float_bias_ = std::move(u.float_bias);
    x_ = u.x;
    r_ = u.residual;
    bias_ = std::move(u.bias);
    stage_ = std::move(u.stage);
    cout_ = u.out_channels;
    const ir::UnitSpec& spec = spec_;
    const Tensor& w = *node.input(ir::kUnitW)->initializer();
    const ir::QuantParams& wq = *node.input(ir::kUnitW)->type().quant;
    w_dims_ = w.dims();
    base_ = spec.base_op;
    QFUSE_RETURN_IF_ERROR(CheckIntegerUnitForm(base_, node.attrs(), w.rank()));
    if (base_ == ir::UnitBaseOp::kConv) {
      QFUSE_ASSIGN_OR_RETURN(conv_, kernels::linalg::ParseConvAttrs(node, /*transpose=*/false));
      if (w.dims()[0] % conv_.group != 0) {
        return absl::InvalidArgumentError(absl::StrCat("w ", ir::DimsToString(w.dims()), " for group ", conv_.group));
      }
      k_ = w.num_elements() / std::max<int64_t>(cout_, 1);
    } else {
      trans_b_ = u.channel_axis == 0;
      k_ = w.dims()[1 - u.channel_axis];
    }
    std::vector<int32_t> w_zps(wq.zero_points.begin(), wq.zero_points.end());
    int64_t max_abs_w = 0;
    if (base_ == ir::UnitBaseOp::kConv) {
      const int64_t group = conv_.group, cout_g = cout_ / group;
      depthwise_ = w.dims()[1] == 1 && cout_g == 1;
      if (depthwise_) {
        const int8_t* wd = w.data<int8_t>();
        dw_weights_.resize(w.num_elements());
        for (int64_t c = 0; c < cout_; ++c) {
          const int32_t zp = w_zps.size() == 1 ? w_zps[0] : w_zps[c];
          for (int64_t t = 0; t < k_; ++t) {
            dw_weights_[c * k_ + t] = wd[c * k_ + t] - zp;
            max_abs_w = std::max<int64_t>(max_abs_w, std::abs(dw_weights_[c * k_ + t]));
          }
        }
      } else {
        weights_ = kernels::quant::PrepareConvGroups(w, group, w_zps);
        for (const PreparedWeights& pw : weights_) max_abs_w = std::max(max_abs_w, pw.max_abs);
      }
    } else {
      kernels::quant::WeightsView v;
      v.tensor = &w;
      v.k = k_;
      v.n = cout_;
      v.stride_k = trans_b_ ? 1 : cout_;
      v.stride_n = trans_b_ ? k_ : 1;
      v.zero_points = w_zps;
      weights_.push_back(kernels::quant::PrepareWeights(v));
      max_abs_w = weights_.back().max_abs;
    }
    int64_t max_abs_bias = 0;
    for (int32_t v : bias_) max_abs_bias = std::max<int64_t>(max_abs_bias, std::abs(int64_t{v}));
    const int64_t max_abs_x = numerics::MaxAbsCentered(kernels::quant::TypeMin(x_.type), kernels::quant::TypeMax(x_.type),
                                                       x_.zero_point);
    return numerics::CheckAccumulatorFitsInt32({k_, max_abs_x, max_abs_w, max_abs_bias}, name_);
  }

  // Stores n outputs of channel c from acc[i * stride] (+ bias) and residual r + offset.
  void Store(const int32_t* acc, int64_t stride, int64_t c, const Tensor* r, Tensor* y, int64_t offset, int64_t n) const {
    const int32_t bias = bias_.empty() ? 0 : bias_[c];
    auto with_residual = [&](auto* res) {
      const int32_t rzp = r_.has_value() ? r_->zero_point : 0;
      if (float_epilogue_) return StoreActivated(acc, stride, bias, res, rzp, c, y, offset, n);
      switch (y->dtype()) {
        case DataType::kInt8:
          stage_.QuantizeRow(acc, stride, bias, res, rzp, c, n, y->data<int8_t>() + offset);
          break;
        case DataType::kUint8:
          stage_.QuantizeRow(acc, stride, bias, res, rzp, c, n, y->data<uint8_t>() + offset);
          break;
        default:
          stage_.DequantizeRow(acc, stride, bias, res, rzp, c, n, y->data<float>() + offset);
          break;
      }
    };
    if (r == nullptr) {
      with_residual(static_cast<const int8_t*>(nullptr));
    } else if (r->dtype() == DataType::kInt8) {
      with_residual(r->data<int8_t>() + offset);
    } else {
      with_residual(r->data<uint8_t>() + offset);
    }
  }

  // Rows [row0, row0 + rows) of a Gemm / MatMul output, int8 / uint8 without a float epilogue:
  // each row is one pixel's channels (OutputStage::QuantizePixels, the bytes of QuantizeRow).
  void StoreRows(const int32_t* acc, int64_t row0, int64_t rows, const Tensor* r, Tensor* y) const {
    const int32_t* bias = bias_.empty() ? nullptr : bias_.data();
    const int32_t rzp = r_.has_value() ? r_->zero_point : 0;
    const int64_t offset = row0 * cout_;
    auto with_output = [&](auto* res) {
      if (y->dtype() == DataType::kInt8) {
        stage_.QuantizePixels(acc, bias, res, rzp, cout_, rows, y->data<int8_t>() + offset);
      } else {
        stage_.QuantizePixels(acc, bias, res, rzp, cout_, rows, y->data<uint8_t>() + offset);
      }
    };
    if (r == nullptr) {
      with_output(static_cast<const int8_t*>(nullptr));
    } else if (r->dtype() == DataType::kInt8) {
      with_output(r->data<int8_t>() + offset);
    } else {
      with_output(r->data<uint8_t>() + offset);
    }
  }

  // Rows [row0, row0 + rows) as onnxruntime's MatMulIntegerToFloat -> Add bias -> [Add
  // residual] -> [activation] -> [QuantizeLinear] compute them (int8_ops.h kMatMulToFloatAttr).
  void StoreRowsInFloat(const int32_t* acc, int64_t row0, int64_t rows, const Tensor* r, Tensor* y) const {
    thread_local std::vector<float> real;
    real.resize(cout_);
    const int32_t rzp = r_.has_value() ? r_->zero_point : 0;
    const float rs = r_.has_value() ? r_->scale : 0.f;
    const float* bias = float_bias_.empty() ? nullptr : float_bias_.data();
    // A clamp activation (or none) into int8 / uint8: the stage's vectorised rows; otherwise
    // (a non-linear activation, or float output) the values, the activation, QuantizeLinear.
    const bool stage_rows = !float_epilogue_ && y->dtype() != DataType::kFloat32;
    auto store = [&](const auto* res) {
      for (int64_t i = 0; i < rows; ++i) {
        const int32_t* a = acc + i * cout_;
        const int64_t offset = (row0 + i) * cout_;
        const auto* row_res = res == nullptr ? res : res + offset;
        if (stage_rows) {
          if (y->dtype() == DataType::kInt8) {
            stage_.QuantizeFloatStepsRow(a, dequant_scales_.data(), bias, row_res, rzp, rs, cout_,
                                         y->data<int8_t>() + offset);
          } else {
            stage_.QuantizeFloatStepsRow(a, dequant_scales_.data(), bias, row_res, rzp, rs, cout_,
                                         y->data<uint8_t>() + offset);
          }
          continue;
        }
        float* v = y->dtype() == DataType::kFloat32 ? y->data<float>() + offset : real.data();
        for (int64_t c = 0; c < cout_; ++c) {
          v[c] = OutputStage::FloatStepsValue(a, dequant_scales_.data(), bias, row_res, rzp, rs, c);
        }
        ir::ApplyUnitActivation(spec_, absl::MakeSpan(v, cout_), IsaAllowed(Isa::kAvx2));
        if (y->dtype() == DataType::kInt8) {
          stage_.QuantizeRealRow(v, cout_, y->data<int8_t>() + offset);
        } else if (y->dtype() == DataType::kUint8) {
          stage_.QuantizeRealRow(v, cout_, y->data<uint8_t>() + offset);
        }
      }
    };
    if (r == nullptr) {
      store(static_cast<const int8_t*>(nullptr));
    } else if (r->dtype() == DataType::kInt8) {
      store(r->data<int8_t>());
    } else {
      store(r->data<uint8_t>());
    }
  }

  // Rows [row0, row0 + rows) of a Gemm / MatMul output that is float, or whose activation is
  // non-linear: the rows' values (OutputStage::DequantizePixels, the values of DequantizeRow),
  // then the activation and QuantizeLinear over the whole block, as StoreActivated per element.
  void StoreRowsDequantized(const int32_t* acc, int64_t row0, int64_t rows, const Tensor* r, Tensor* y) const {
    const int32_t* bias = bias_.empty() ? nullptr : bias_.data();
    const int32_t rzp = r_.has_value() ? r_->zero_point : 0;
    const int64_t offset = row0 * cout_, n = rows * cout_;
    const bool float_out = y->dtype() == DataType::kFloat32;
    const uint8_t* res = r == nullptr ? nullptr : static_cast<const uint8_t*>(r->raw_data()) + offset;
    const bool res_signed = r != nullptr && r->dtype() == DataType::kInt8;
    if (float_epilogue_ && !float_out &&  // in one pass where activated_pixels.h allows
        stage_.ActivatePixels(spec_, acc, bias, res, res_signed, rzp, cout_, rows,
                              static_cast<uint8_t*>(y->raw_data()) + offset, y->dtype() == DataType::kInt8)) {
      return;
    }
    thread_local std::vector<float> real;
    if (!float_out) GrowTo(real, n);
    float* v = float_out ? y->data<float>() + offset : real.data();
    if (res_signed) {
      stage_.DequantizePixels(acc, bias, reinterpret_cast<const int8_t*>(res), rzp, cout_, rows, v);
    } else {
      stage_.DequantizePixels(acc, bias, res, rzp, cout_, rows, v);
    }
    if (float_epilogue_) ir::ApplyUnitActivation(spec_, absl::MakeSpan(v, n), IsaAllowed(Isa::kAvx2));
    if (y->dtype() == DataType::kInt8) {
      stage_.QuantizeRealRow(v, n, y->data<int8_t>() + offset);
    } else if (y->dtype() == DataType::kUint8) {
      stage_.QuantizeRealRow(v, n, y->data<uint8_t>() + offset);
    }
  }

  // The non-linear activation epilogue of output_stage.h.
  template <typename B>
  void StoreActivated(const int32_t* acc, int64_t stride, int32_t bias, const B* res, int32_t rzp, int64_t c, Tensor* y,
                      int64_t offset, int64_t n) const {
    if (y->dtype() == DataType::kFloat32) {
      float* out = y->data<float>() + offset;
      stage_.DequantizeRow(acc, stride, bias, res, rzp, c, n, out);
      ir::ApplyUnitActivation(spec_, absl::MakeSpan(out, n), IsaAllowed(Isa::kAvx2));
      return;
    }
    thread_local std::vector<float> real;
    real.resize(n);
    stage_.DequantizeRow(acc, stride, bias, res, rzp, c, n, real.data());
    ir::ApplyUnitActivation(spec_, absl::MakeSpan(real), IsaAllowed(Isa::kAvx2));
    if (y->dtype() == DataType::kInt8) {
      stage_.QuantizeRealRow(real.data(), n, y->data<int8_t>() + offset);
    } else {
      stage_.QuantizeRealRow(real.data(), n, y->data<uint8_t>() + offset);
    }
  }

  absl::Status CheckResidual(const Tensor* r, const std::vector<int64_t>& out_dims) const {
    if (r != nullptr && r->dims() != out_dims) {
      return absl::InvalidArgumentError(absl::StrCat("residual shape ", ir::DimsToString(r->dims()),
                                                     " differs from the output's ", ir::DimsToString(out_dims)));
    }
    return absl::OkStatus();
  }

  absl::Status RunConv(const KernelContext& ctx, const Tensor& x, const Tensor* r, Tensor* y) const {
    const int64_t group = conv_.group, cout_g = cout_ / group, cin_g = w_dims_[1];
    if (x.rank() != static_cast<int64_t>(w_dims_.size()) || x.dims()[1] != cin_g * group) {
      return absl::InvalidArgumentError(absl::StrCat("x ", ir::DimsToString(x.dims()), " does not match w ",
                                                     ir::DimsToString(w_dims_), " and group ", group));
    }
    QFUSE_ASSIGN_OR_RETURN(ConvGeometry g,
                           kernels::linalg::ResolveConv(conv_, absl::MakeConstSpan(x.dims()).subspan(2),
                                                        absl::MakeConstSpan(w_dims_).subspan(2)));
    const int64_t batch = x.dims()[0], cin = x.dims()[1];
    const std::vector<int64_t> out_dims = kernels::linalg::ConvOutputDims(batch, cout_, g, /*image_side=*/false);
    QFUSE_RETURN_IF_ERROR(CheckResidual(r, out_dims));
    QFUSE_ASSIGN_OR_RETURN(*y, Tensor::Create(stage_.output_type(), out_dims));
    if (y->num_elements() == 0) return absl::OkStatus();
    const int64_t pixels = g.col_size(), image_size = g.image_size();
    if (depthwise_) {
      const bool plain_2d = g.image[0] == 1 && g.kernel[0] == 1 && g.dilation[1] == 1 && g.dilation[2] == 1;
      ctx.pool->ParallelFor(batch * cout_, 1, [&](int64_t begin, int64_t end) {
        thread_local std::vector<int32_t> acc;
        acc.resize(pixels);
        for (int64_t item = begin; item < end; ++item) {
          const int64_t c = item % cout_;
          const int32_t* w = dw_weights_.data() + c * k_;
          if (x_.type == DataType::kInt8) {
            const int8_t* image = x.data<int8_t>() + item * image_size;
            plain_2d ? DepthwiseAccumulate2d(g, image, x_.zero_point, w, acc.data())
                     : DepthwiseAccumulate(g, image, x_.zero_point, w, acc.data());
          } else {
            const uint8_t* image = x.data<uint8_t>() + item * image_size;
            plain_2d ? DepthwiseAccumulate2d(g, image, x_.zero_point, w, acc.data())
                     : DepthwiseAccumulate(g, image, x_.zero_point, w, acc.data());
          }
          Store(acc.data(), 1, c, r, y, item * pixels, pixels);
        }
      });
      return absl::OkStatus();
    }
    kernels::quant::ConvTilesArgs tiles;
    tiles.geometry = &g;
    tiles.x = static_cast<const uint8_t*>(x.raw_data());
    tiles.x_signed = x_.type == DataType::kInt8;
    tiles.x_zero_point = x_.zero_point;
    tiles.batch = batch;
    tiles.cin = cin;
    tiles.group = group;
    tiles.weights = weights_;
    tiles.pool = ctx.pool;
    kernels::quant::ForEachConvTile(tiles, [&](int64_t n, int64_t gi, int64_t p0, int64_t p1, const int32_t* acc) {
      thread_local std::vector<int32_t> acc_t;
      acc_t.resize(kernels::quant::kConvTilePixels * cout_g);
      // acc is [pixel][oc]; the output is channel-major: transpose so each channel's
      // row is contiguous for the output stage.
      const int64_t rows_n = p1 - p0;
      for (int64_t px = 0; px < rows_n; ++px) {
        for (int64_t oc = 0; oc < cout_g; ++oc) acc_t[oc * rows_n + px] = acc[px * cout_g + oc];
      }
      for (int64_t oc = 0; oc < cout_g; ++oc) {
        const int64_t c = gi * cout_g + oc;
        Store(acc_t.data() + oc * rows_n, 1, c, r, y, (n * cout_ + c) * pixels + p0, rows_n);
      }
    });
    return absl::OkStatus();
  }

  absl::Status RunGemm(const KernelContext& ctx, const Tensor& x, const Tensor* r, Tensor* y) const {
    if (x.rank() < 2 || x.dims().back() != k_ || (base_ == ir::UnitBaseOp::kGemm && x.rank() != 2)) {
      return absl::InvalidArgumentError(absl::StrCat("x ", ir::DimsToString(x.dims()), " does not match w ",
                                                     ir::DimsToString(w_dims_)));
    }
    std::vector<int64_t> out_dims = x.dims();
    out_dims.back() = cout_;
    QFUSE_RETURN_IF_ERROR(CheckResidual(r, out_dims));
    QFUSE_ASSIGN_OR_RETURN(*y, Tensor::CreateUninitialized(stage_.output_type(), out_dims));  // every row written
    const int64_t m = x.num_elements() / std::max<int64_t>(k_, 1);
    if (y->num_elements() == 0) return absl::OkStatus();
    // Blocks of up to kRowsPerTask rows, smaller when that leaves a thread idle (a transformer's few tokens).
    const int64_t threads = std::max(1, ctx.pool->num_threads());
    const int64_t rows_per_task = std::clamp<int64_t>((m + threads - 1) / threads, 4, kRowsPerTask);
    const int64_t tasks = (m + rows_per_task - 1) / rows_per_task;
    const bool quantized_rows = !float_epilogue_ && y->dtype() != DataType::kFloat32;
    ctx.pool->ParallelFor(tasks, 1, [&](int64_t begin, int64_t end) {
      thread_local std::vector<int32_t> acc;
      acc.resize(kRowsPerTask * cout_);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t m0 = task * rows_per_task, m1 = std::min(m, m0 + rows_per_task);
        kernels::quant::Int8GemmArgs args;
        args.m = m1 - m0;
        args.a = static_cast<const uint8_t*>(x.raw_data()) + m0 * k_;
        args.a_signed = x_.type == DataType::kInt8;
        args.lda = k_;
        args.a_zero_point = x_.zero_point;
        args.c = acc.data();
        args.ldc = cout_;
        kernels::quant::IntegerGemm(args, weights_[0]);
        if (matmul_to_float_) {
          StoreRowsInFloat(acc.data(), m0, m1 - m0, r, y);
          continue;
        }
        if (quantized_rows) {
          StoreRows(acc.data(), m0, m1 - m0, r, y);
          continue;
        }
        StoreRowsDequantized(acc.data(), m0, m1 - m0, r, y);
      }
    });
    return absl::OkStatus();
  }

  std::string name_;
  ir::UnitSpec spec_;
  bool float_epilogue_ = false;  // a non-linear activation
  bool matmul_to_float_ = false;  // int8_ops.h kMatMulToFloatAttr
  std::vector<float> dequant_scales_;  // [Cout] float32(s_x * s_w[c]), with matmul_to_float_
  std::vector<float> float_bias_;      // [Cout] float(b[c]) * s_b[c], with matmul_to_float_ and a bias
  ir::UnitBaseOp base_ = ir::UnitBaseOp::kConv;
  ConvAttrs conv_;
  bool trans_b_ = false;
  bool depthwise_ = false;
  std::vector<int64_t> w_dims_;
  int64_t cout_ = 0, k_ = 0;
  std::vector<int32_t> dw_weights_;       // depthwise: [C][taps], centred
  std::vector<PreparedWeights> weights_;  // per group (Conv) or one (Gemm / MatMul)
  std::vector<int32_t> bias_;             // [Cout] or empty
  ActivationQuant x_;
  std::optional<ActivationQuant> r_;
  OutputStage stage_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearUnitKernel(const ir::Node& node) {
  return QLinearUnitKernel::Create(node);
}

}  // namespace qfuse::runtime::int8
