// QLinearMatMul-10 and MatMulInteger-10: numpy matmul semantics (1-D operands, batch
// broadcasting), uint8/int8 operands, a zero point (and QLinearMatMul scale) per tensor
// or per row of A, b zero point (and scale) per tensor or per column of B. B is prepared
// for the int8 GEMM once when it is a graph constant.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "numerics/requantize.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/quant/quant_ops.h"
#include "runtime/kernels/quant/quant_util.h"
#include "runtime/kernels/quant/requantize_row.h"

namespace qfuse::runtime::kernels {
namespace {


using quant::OptionalInput;
using quant::PreparedWeights;

struct MatMulInputs {
  int a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp;  // -1: not an input of this op
};
constexpr MatMulInputs kQLinearMatMulInputs = {0, 1, 2, 3, 4, 5, 6, 7};
constexpr MatMulInputs kMatMulIntegerInputs = {0, -1, 2, 1, -1, 3, -1, -1};

// B as [batch..., K, N] (a 1-D B is [K, 1]).
std::vector<int64_t> MatrixDimsB(const Tensor& b) {
  std::vector<int64_t> d = b.dims();
  if (d.size() == 1) d.push_back(1);
  return d;
}

// One PreparedWeights per B matrix of the batch, prepared in parallel on `pool` when given.
// `scope`: kCurrentIsa when B is packed for this Run's GEMMs only (quant::PackingScope).
absl::StatusOr<std::vector<PreparedWeights>> PrepareB(const Tensor& b, const Tensor* b_zp_t,
                                                      quant::PackingScope scope = quant::PackingScope::kAnyIsa,
                                                      const ThreadPool* pool = nullptr) {
  if (!quant::IsQuantizedByteType(b.dtype()) || b.rank() < 1) {
    return absl::UnimplementedError(absl::StrCat("B has type ", ir::DataTypeName(b.dtype()), "; expected INT8 or UINT8"));
  }
  const std::vector<int64_t> d = MatrixDimsB(b);
  const int64_t k = d[d.size() - 2], n = d.back();
  QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> zps, quant::ReadZeroPoints(b_zp_t, n, b.dtype(), "b_zero_point"));
  const int64_t count = k * n == 0 ? 0 : b.num_elements() / (k * n);
  std::vector<PreparedWeights> out(count);
  auto prepare = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      quant::WeightsView v;
      v.tensor = &b;
      v.offset = i * k * n;
      v.k = k;
      v.n = n;
      v.stride_k = n;
      v.stride_n = 1;
      v.zero_points = zps;
      v.scope = scope;
      out[i] = quant::PrepareWeights(v);
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(count, 1, prepare);
  } else {
    prepare(0, count);
  }
  return out;
}

class IntegerMatMulKernel : public Kernel {
 public:
  IntegerMatMulKernel(std::string name, bool qlinear)
      : name_(std::move(name)), qlinear_(qlinear), in_(qlinear ? kQLinearMatMulInputs : kMatMulIntegerInputs) {}

  absl::Status PrepareConstantWeights(const ir::Node& node) {
    const ir::Value* b = node.input(in_.b);
    const ir::Value* zp = node.input(in_.b_zp);
    if (b == nullptr || !b->is_constant() || (zp != nullptr && !zp->is_constant())) return absl::OkStatus();
    QFUSE_ASSIGN_OR_RETURN(constant_b_, PrepareB(*b->initializer(), zp != nullptr ? zp->initializer() : nullptr));
    has_constant_b_ = true;
    // Refuse a layer that could overflow now when A's type and zero points are known.
    const ir::Value* a = node.input(in_.a);
    const ir::Value* a_zp = node.input(in_.a_zp);
    if (a != nullptr && quant::IsQuantizedByteType(a->type().dtype) && (a_zp == nullptr || a_zp->is_constant())) {
      const Tensor* zp_t = a_zp != nullptr ? a_zp->initializer() : nullptr;
      QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> zps, quant::ReadZeroPoints(zp_t, zp_t != nullptr ? zp_t->num_elements() : 1,
                                                                             a->type().dtype, "a_zero_point"));
      QFUSE_RETURN_IF_ERROR(quant::CheckGemmAccumulatorBound(a->type().dtype, zps, constant_b_, 0, name_));
    }
    return absl::OkStatus();
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    const Tensor* a = OptionalInput(inputs, in_.a);
    const Tensor* b = OptionalInput(inputs, in_.b);
    if (a == nullptr || b == nullptr) return absl::InvalidArgumentError("A and B are required");
    for (int i : {in_.a_scale, in_.b_scale, in_.y_scale}) {
      if (i >= 0 && OptionalInput(inputs, i) == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is required"));
    }
    if (!quant::IsQuantizedByteType(a->dtype()) || a->rank() < 1 || b->rank() < 1) {
      return absl::UnimplementedError(absl::StrCat("A has type ", ir::DataTypeName(a->dtype()), " and shape ",
                                                   ir::DimsToString(a->dims()), "; expected INT8 or UINT8, rank >= 1"));
    }
    std::vector<int64_t> ad = a->dims();
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    const std::vector<int64_t> bd = MatrixDimsB(*b);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    if (bd[bd.size() - 2] != k) {
      return absl::InvalidArgumentError(absl::StrCat("A ", ir::DimsToString(a->dims()), " and B ",
                                                     ir::DimsToString(b->dims()), " have different K"));
    }
    const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(a_batch, b_batch));

    QFUSE_ASSIGN_OR_RETURN(std::vector<int32_t> a_zp,
                           quant::ReadZeroPoints(OptionalInput(inputs, in_.a_zp), m, a->dtype(), "a_zero_point"));
    std::vector<PreparedWeights> run_b;
    const std::vector<PreparedWeights>* weights = &constant_b_;
    if (!has_constant_b_) {
      QFUSE_ASSIGN_OR_RETURN(
          run_b, PrepareB(*b, OptionalInput(inputs, in_.b_zp), quant::PackingScope::kCurrentIsa, ctx.pool));
      weights = &run_b;
    }
    QFUSE_RETURN_IF_ERROR(quant::CheckGemmAccumulatorBound(a->dtype(), a_zp, *weights, 0, name_));

    // Multipliers: mult[r * cols + c] for a_scale row r (1 or M) and b_scale column c (1 or N).
    std::vector<float> mult;
    int64_t mult_rows = 1, mult_cols = 1;
    DataType out_type = DataType::kInt32;
    int32_t y_zp = 0;
    if (qlinear_) {
      mult_rows = inputs[in_.a_scale]->num_elements();
      mult_cols = inputs[in_.b_scale]->num_elements();
      QFUSE_ASSIGN_OR_RETURN(std::vector<float> a_scale, quant::ReadScales(*inputs[in_.a_scale], m, "a_scale"));
      QFUSE_ASSIGN_OR_RETURN(std::vector<float> b_scale, quant::ReadScales(*inputs[in_.b_scale], n, "b_scale"));
      QFUSE_ASSIGN_OR_RETURN(const quant::OutputQuant y_quant,
                             quant::ReadOutputQuant(*inputs[in_.y_scale], OptionalInput(inputs, in_.y_zp)));
      out_type = y_quant.type;
      y_zp = y_quant.zero_point;
      for (float as : a_scale) {
        for (float bs : b_scale) mult.push_back(numerics::OnnxMultiplier(as, bs, y_quant.scale));
      }
    }

    std::vector<int64_t> out_dims = batch;
    if (a->rank() > 1) out_dims.push_back(m);
    if (b->rank() > 1) out_dims.push_back(n);
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out_type, out_dims));  // every matrix written
    if (outputs[0].num_elements() == 0) return absl::OkStatus();

    const std::vector<int64_t> a_strides = BroadcastStrides(a_batch, batch);
    const std::vector<int64_t> b_strides = BroadcastStrides(b_batch, batch);
    const int64_t batches = ir::NumElements(batch);
    // A batch of several matrices runs one matrix per task; a single one spreads its rows.
    const bool per_matrix = batches > 1;
    auto run_matrix = [&](int64_t bi, const ThreadPool* gemm_pool) {
      thread_local std::vector<int32_t> acc;
      acc.resize(out_type == DataType::kInt32 ? 0 : m * n);
      int64_t a_index = 0, b_index = 0, rest = bi;
      for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
        const int64_t i = rest % batch[d];
        rest /= batch[d];
        a_index += i * a_strides[d];
        b_index += i * b_strides[d];
      }
      quant::Int8GemmArgs args;
      args.m = m;
      args.a = static_cast<const uint8_t*>(a->raw_data()) + a_index * m * k;
      args.a_signed = a->dtype() == DataType::kInt8;
      args.lda = k;
      args.a_zero_point = a_zp[0];
      args.a_row_zero_points = a_zp.size() > 1 ? a_zp.data() : nullptr;
      args.c = out_type == DataType::kInt32 ? outputs[0].data<int32_t>() + bi * m * n : acc.data();
      args.ldc = n;
      args.pool = gemm_pool;
      if (k == 0) {  // an empty sum: B has no matrices to prepare, every accumulator is 0
        std::fill_n(args.c, m * n, 0);
      } else {
        quant::IntegerGemm(args, (*weights)[b_index]);
      }
      if (out_type == DataType::kInt32) return;
      auto requantize = [&](auto* y) {
        using T = std::remove_pointer_t<decltype(y)>;
        for (int64_t r = 0; r < m; ++r) {
          const float* row_mult = mult.data() + (mult_rows == 1 ? 0 : r) * mult_cols;
          if (mult_cols == 1) {  // one multiplier per row: vectorised
            quant::RequantizeOnnxRowFast<T>(acc.data() + r * n, n, row_mult[0], y_zp, y + r * n);
            continue;
          }
          for (int64_t c = 0; c < n; ++c) {
            y[r * n + c] = numerics::RequantizeOnnx<T>(acc[r * n + c], row_mult[c], y_zp);
          }
        }
      };
      if (out_type == DataType::kInt8) {
        requantize(outputs[0].data<int8_t>() + bi * m * n);
      } else {
        requantize(outputs[0].data<uint8_t>() + bi * m * n);
      }
    };
    if (per_matrix) {
      ctx.pool->ParallelFor(batches, 1, [&](int64_t begin, int64_t end) {
        for (int64_t bi = begin; bi < end; ++bi) run_matrix(bi, nullptr);
      });
    } else {
      run_matrix(0, ctx.pool);
    }
    return absl::OkStatus();
  }

 private:
  const std::string name_;
  const bool qlinear_;
  const MatMulInputs in_;
  bool has_constant_b_ = false;
  std::vector<PreparedWeights> constant_b_;
};

absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerMatMul(const ir::Node& node, bool qlinear) {
  auto kernel = std::make_unique<IntegerMatMulKernel>(node.Describe(), qlinear);
  QFUSE_RETURN_IF_ERROR(kernel->PrepareConstantWeights(node));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateQLinearMatMulKernel(const ir::Node& node) {
  return CreateIntegerMatMul(node, /*qlinear=*/true);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateMatMulIntegerKernel(const ir::Node& node) {
  return CreateIntegerMatMul(node, /*qlinear=*/false);
}

}  // namespace qfuse::runtime::kernels
