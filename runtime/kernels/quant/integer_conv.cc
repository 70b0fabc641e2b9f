// QLinearConv-10 and ConvInteger-10: 1-3 spatial dims, groups, dilations, pads,
// auto_pad; uint8/int8 activations and weights; weight zero points per tensor or per
// output channel. The int32 accumulators come from quant::ForEachConvTile (im2row
// tiles of output pixels times the weights prepared once per group, in parallel).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "numerics/requantize.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/conv_tiles.h"
#include "runtime/kernels/quant/quant_ops.h"
#include "runtime/kernels/quant/quant_util.h"

namespace qfuse::runtime::kernels {
namespace {


using linalg::ConvAttrs;
using linalg::ConvGeometry;
using quant::OptionalInput;
using quant::PreparedWeights;

// Input positions of the two conv operators.
struct ConvInputs {
  int x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, bias;  // -1: not an input of this op
};
constexpr ConvInputs kQLinearConvInputs = {0, 1, 2, 3, 4, 5, 6, 7, 8};
constexpr ConvInputs kConvIntegerInputs = {0, -1, 2, 1, -1, 3, -1, -1, -1};

class IntegerConvKernel : public Kernel {
 public:
  IntegerConvKernel(std::string name, ConvAttrs attrs, bool qlinear)
      : name_(std::move(name)), attrs_(std::move(attrs)), qlinear_(qlinear),
        in_(qlinear ? kQLinearConvInputs : kConvIntegerInputs) {}

  // Prepares the weights once when they and their zero points are graph constants.
  absl::Status PrepareConstantWeights(const ir::Node& node) {
    const ir::Value* w = node.input(in_.w);
    const ir::Value* zp = node.input(in_.w_zp);
    if (w == nullptr || !w->is_constant() || (zp != nullptr && !zp->is_constant())) return absl::OkStatus();
    QFUSE_ASSIGN_OR_RETURN(std::vector<PreparedWeights> groups,
                           Prepare(*w->initializer(), zp != nullptr ? zp->initializer() : nullptr));
    constant_weights_ = std::move(groups);
    // Refuse a layer that could overflow now when x's type and zero point and the bias
    // are known; otherwise Run checks.
    const ir::Value* x = node.input(in_.x);
    const ir::Value* x_zp = node.input(in_.x_zp);
    const ir::Value* bias = in_.bias >= 0 ? node.input(in_.bias) : nullptr;
    if (x != nullptr && quant::IsQuantizedByteType(x->type().dtype) && (x_zp == nullptr || x_zp->is_constant()) &&
        (bias == nullptr || bias->is_constant())) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> x_zps,
                             quant::ReadZeroPoints(x_zp != nullptr ? x_zp->initializer() : nullptr, 1,
                                                   x->type().dtype, "x_zero_point"));
      QFUSE_ASSIGN_OR_RETURN(int64_t max_abs_bias, MaxAbsBias(bias != nullptr ? bias->initializer() : nullptr,
                                                              w->initializer()->dims()[0]));
      QFUSE_RETURN_IF_ERROR(
          quant::CheckGemmAccumulatorBound(x->type().dtype, {x_zps[0]}, constant_weights_, max_abs_bias, name_));
    }
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    const Tensor* x = OptionalInput(inputs, in_.x);
    const Tensor* w = OptionalInput(inputs, in_.w);
    if (x == nullptr || w == nullptr) return absl::InvalidArgumentError("x and w are required");
    for (int i : {in_.x_scale, in_.w_scale, in_.y_scale}) {
      if (i >= 0 && OptionalInput(inputs, i) == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is required"));
    }
    if (!quant::IsQuantizedByteType(x->dtype())) {
      return absl::UnimplementedError(absl::StrCat("x has type ", ir::DataTypeName(x->dtype()), "; expected INT8 or UINT8"));
    }
    if (x->rank() < 3 || w->rank() != x->rank()) {
      return absl::InvalidArgumentError(absl::StrCat("x ", ir::DimsToString(x->dims()), " and w ",
                                                     ir::DimsToString(w->dims()), " must have the same rank >= 3"));
    }
    const int64_t batch = x->dims()[0], cin = x->dims()[1], cout = w->dims()[0], group = attrs_.group;
    if (cin != w->dims()[1] * group || cout % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("x ", ir::DimsToString(x->dims()), ", w ",
                                                     ir::DimsToString(w->dims()), " and group ", group, " do not agree"));
    }
    QFUSE_ASSIGN_OR_RETURN(ConvGeometry g, linalg::ResolveConv(attrs_, absl::MakeConstSpan(x->dims()).subspan(2),
                                                               absl::MakeConstSpan(w->dims()).subspan(2)));
    QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> x_zp,
                           quant::ReadZeroPoints(OptionalInput(inputs, in_.x_zp), 1, x->dtype(), "x_zero_point"));

    std::vector<PreparedWeights> run_weights;
    const std::vector<PreparedWeights>* weights = &constant_weights_;
    if (constant_weights_.empty()) {
      QFUSE_ASSIGN_OR_RETURN(run_weights, Prepare(*w, OptionalInput(inputs, in_.w_zp)));
      weights = &run_weights;
    }
    const int64_t cout_g = cout / group;

    const Tensor* bias_t = OptionalInput(inputs, in_.bias);
    QFUSE_ASSIGN_OR_RETURN(const int64_t max_abs_bias, MaxAbsBias(bias_t, cout));
    const int32_t* bias = bias_t != nullptr ? bias_t->data<int32_t>() : nullptr;
    QFUSE_RETURN_IF_ERROR(quant::CheckGemmAccumulatorBound(x->dtype(), {x_zp[0]}, *weights, max_abs_bias, name_));

    // Requantization parameters.
    std::vector<float> multipliers;
    DataType out_type = DataType::kInt32;
    int32_t y_zp = 0;
    if (qlinear_) {
      QFUSE_ASSIGN_OR_RETURN(std::vector<float> x_scale, quant::ReadScales(*inputs[in_.x_scale], 1, "x_scale"));
      QFUSE_ASSIGN_OR_RETURN(std::vector<float> w_scale, quant::ReadScales(*inputs[in_.w_scale], cout, "w_scale"));
      QFUSE_ASSIGN_OR_RETURN(const quant::OutputQuant y_quant,
                             quant::ReadOutputQuant(*inputs[in_.y_scale], OptionalInput(inputs, in_.y_zp)));
      out_type = y_quant.type;
      y_zp = y_quant.zero_point;
      multipliers.resize(w_scale.size());
      numerics::OnnxMultipliers(x_scale[0], w_scale, y_quant.scale, absl::MakeSpan(multipliers));
    }

    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(out_type, linalg::ConvOutputDims(batch, cout, g, /*image_side=*/false)));
    if (outputs[0].num_elements() == 0) return absl::OkStatus();

    const int64_t pixels = g.col_size();
    quant::ConvTilesArgs tiles;
    tiles.geometry = &g;
    tiles.x = static_cast<const uint8_t*>(x->raw_data());
    tiles.x_signed = x->dtype() == DataType::kInt8;
    tiles.x_zero_point = x_zp[0];
    tiles.batch = batch;
    tiles.cin = cin;
    tiles.group = group;
    tiles.weights = *weights;
    tiles.pool = ctx.pool;
    void* yd = outputs[0].raw_data();
    quant::ForEachConvTile(tiles, [&](int64_t n, int64_t gi, int64_t p0, int64_t p1, const int32_t* acc) {
      const int64_t oc0 = gi * cout_g;
      for (int64_t oc = 0; oc < cout_g; ++oc) {
        const int64_t out_offset = (n * cout + oc0 + oc) * pixels + p0;
        const int32_t b = bias != nullptr ? bias[oc0 + oc] : 0;
        const int32_t* col = acc + oc;
        if (out_type == DataType::kInt32) {
          int32_t* y = static_cast<int32_t*>(yd) + out_offset;
          for (int64_t r = 0; r < p1 - p0; ++r) y[r] = col[r * cout_g];
          continue;
        }
        const float m = multipliers.size() == 1 ? multipliers[0] : multipliers[oc0 + oc];
        // The bias is added in int32 with wrap-around, as onnxruntime does (the bound
        // check above rules out overflow).
        auto requantize = [&](auto* y) {
          using T = std::remove_pointer_t<decltype(y)>;
          for (int64_t r = 0; r < p1 - p0; ++r) {
            const int32_t a = static_cast<int32_t>(static_cast<uint32_t>(col[r * cout_g]) + static_cast<uint32_t>(b));
            y[r] = numerics::RequantizeOnnx<T>(a, m, y_zp);
          }
        };
        if (out_type == DataType::kInt8) {
          requantize(static_cast<int8_t*>(yd) + out_offset);
        } else {
          requantize(static_cast<uint8_t*>(yd) + out_offset);
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  // max |bias| of an optional INT32 [cout] bias.
  static absl::StatusOr<int64_t> MaxAbsBias(const Tensor* b, int64_t cout) {
    if (b == nullptr) return 0;
    if (b->dtype() != DataType::kInt32 || b->num_elements() != cout) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be INT32 [", cout, "], got ",
                                                     ir::DataTypeName(b->dtype()), " ", ir::DimsToString(b->dims())));
    }
    int64_t max_abs = 0;
    for (int32_t v : b->values<int32_t>()) max_abs = std::max<int64_t>(max_abs, std::abs(int64_t{v}));
    return max_abs;
  }

  absl::StatusOr<std::vector<PreparedWeights>> Prepare(const Tensor& w, const Tensor* w_zp_t) const {
    if (!quant::IsQuantizedByteType(w.dtype()) || w.rank() < 3) {
      return absl::UnimplementedError(absl::StrCat("w has type ", ir::DataTypeName(w.dtype()), " and shape ",
                                                   ir::DimsToString(w.dims()), "; expected INT8 or UINT8 of rank >= 3"));
    }
    const int64_t cout = w.dims()[0];
    if (cout % attrs_.group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("w has ", cout, " output channels for group ", attrs_.group));
    }
    QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> w_zps, quant::ReadZeroPoints(w_zp_t, cout, w.dtype(), "w_zero_point"));
    return quant::PrepareConvGroups(w, attrs_.group, w_zps);
  }

  const std::string name_;
  const ConvAttrs attrs_;
  const bool qlinear_;
  const ConvInputs in_;
  std::vector<PreparedWeights> constant_weights_;  // per group; empty when not constant
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerConv(const ir::Node& node, bool qlinear) {
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, linalg::ParseConvAttrs(node, /*transpose=*/false));
  auto kernel = std::make_unique<IntegerConvKernel>(node.Describe(), std::move(attrs), qlinear);
  QFUSE_RETURN_IF_ERROR(kernel->PrepareConstantWeights(node));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearConvKernel(const ir::Node& node) {
  return CreateIntegerConv(node, /*qlinear=*/true);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateConvIntegerKernel(const ir::Node& node) {
  return CreateIntegerConv(node, /*qlinear=*/false);
}

}  // namespace qfuse::runtime::kernels
