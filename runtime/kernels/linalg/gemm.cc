// Gemm (alpha, beta, transA, transB, broadcast C) and MatMul (numpy semantics: 1-D
// operands, batched, broadcast batch dims), FLOAT and DOUBLE, on Eigen GEMM.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/kernels/linalg/parallel_gemm.h"

namespace qfuse::runtime::kernels {
namespace {

absl::Status CheckFloatTypes(absl::Span<const Tensor* const> inputs) {
  const DataType t = inputs[0]->dtype();
  if (t != DataType::kFloat32 && t != DataType::kFloat64) {
    return absl::UnimplementedError(absl::StrCat("type ", ir::DataTypeName(t), " is not supported (FLOAT, DOUBLE)"));
  }
  for (const Tensor* in : inputs) {
    if (in != nullptr && in->dtype() != t) {
      return absl::InvalidArgumentError(absl::StrCat("inputs mix ", ir::DataTypeName(t), " and ",
                                                     ir::DataTypeName(in->dtype())));
    }
  }
  return absl::OkStatus();
}

struct GemmParams {
  float alpha = 1.0f;
  float beta = 1.0f;
  bool trans_a = false;
  bool trans_b = false;
};

class GemmKernel : public Kernel {
 public:
  explicit GemmKernel(GemmParams params) : p_(params) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    QFUSE_RETURN_IF_ERROR(CheckFloatTypes(inputs));
    if (inputs[0]->dtype() == DataType::kFloat64) return RunTyped<double>(ctx, inputs, outputs);
    return RunTyped<float>(ctx, inputs, outputs);
  }

 private:
  template <typename T>
  absl::Status RunTyped(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                        absl::Span<Tensor> outputs) const {
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const Tensor* c = inputs.size() > 2 ? inputs[2] : nullptr;
    if (a.rank() != 2 || b.rank() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("A ", ir::DimsToString(a.dims()), " and B ",
                                                     ir::DimsToString(b.dims()), " must be 2-D"));
    }
    const int64_t m = p_.trans_a ? a.dims()[1] : a.dims()[0];
    const int64_t k = p_.trans_a ? a.dims()[0] : a.dims()[1];
    const int64_t kb = p_.trans_b ? b.dims()[1] : b.dims()[0];
    const int64_t n = p_.trans_b ? b.dims()[0] : b.dims()[1];
    if (k != kb) {
      return absl::InvalidArgumentError(absl::StrCat("inner dims differ: A ", ir::DimsToString(a.dims()), " B ",
                                                     ir::DimsToString(b.dims()), " transA=", p_.trans_a,
                                                     " transB=", p_.trans_b));
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(a.dtype(), {m, n}));
    T* y = outputs[0].template data<T>();
    const bool use_c = c != nullptr && p_.beta != 0.0f;
    if (c != nullptr) {
      // Unidirectional broadcast of C to [M, N].
      const std::vector<int64_t> out_dims = {m, n};
      bool ok = c->rank() <= 2;
      for (int64_t i = 0; ok && i < c->rank(); ++i) {
        const int64_t d = c->dims()[c->rank() - 1 - i];
        ok = d == 1 || d == out_dims[1 - i];
      }
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("C ", ir::DimsToString(c->dims()),
                                                       " does not broadcast to [", m, ",", n, "]"));
      }
      if (use_c) {
        const std::vector<int64_t> strides = BroadcastStrides(c->dims(), out_dims);
        const T* cd = c->template data<T>();
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) y[i * n + j] = cd[i * strides[0] + j * strides[1]];
        }
      }
    }
    if (m * n == 0) return absl::OkStatus();
    linalg::ParallelGemm<T>(ctx.pool, p_.trans_a, p_.trans_b, m, n, k, static_cast<T>(p_.alpha),
                            a.template data<T>(), a.dims()[1], b.template data<T>(), b.dims()[1],
                            use_c ? static_cast<T>(p_.beta) : T(0), y, n);
    return absl::OkStatus();
  }

  const GemmParams p_;
};

class MatMulKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    QFUSE_RETURN_IF_ERROR(CheckFloatTypes(inputs));
    if (inputs[0]->dtype() == DataType::kFloat64) return RunTyped<double>(ctx, *inputs[0], *inputs[1], outputs);
    return RunTyped<float>(ctx, *inputs[0], *inputs[1], outputs);
  }

 private:
  template <typename T>
  absl::Status RunTyped(const KernelContext& ctx, const Tensor& a, const Tensor& b, absl::Span<Tensor> outputs) const {
    if (a.rank() < 1 || b.rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("MatMul operands must have rank >= 1, got ",
                                                     ir::DimsToString(a.dims()), " and ", ir::DimsToString(b.dims())));
    }
    std::vector<int64_t> ad = a.dims(), bd = b.dims();
    const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
    if (a_vec) ad.insert(ad.begin(), 1);
    if (b_vec) bd.push_back(1);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    if (bd[bd.size() - 2] != k) {
      return absl::InvalidArgumentError(absl::StrCat("inner dims differ: ", ir::DimsToString(a.dims()), " x ",
                                                     ir::DimsToString(b.dims())));
    }
    const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(a_batch, b_batch));
    std::vector<int64_t> out_dims = batch;
    if (!a_vec) out_dims.push_back(m);
    if (!b_vec) out_dims.push_back(n);
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(a.dtype(), out_dims));
    T* y = outputs[0].template data<T>();
    const int64_t batch_count = ir::NumElements(batch);
    if (batch_count * m * n == 0) return absl::OkStatus();
    const T* a_data = a.template data<T>();
    const T* b_data = b.template data<T>();
    const int64_t b_count = ir::NumElements(b_batch);
    if (b_count == 1 && ir::NumElements(a_batch) == batch_count) {
      // B is one matrix: fold A's batch into rows, one GEMM.
      linalg::ParallelGemm<T>(ctx.pool, false, false, batch_count * m, n, k, T(1), a_data, k, b_data, n, T(0), y, n);
      return absl::OkStatus();
    }
    const std::vector<int64_t> a_strides = BroadcastStrides(a_batch, batch);
    const std::vector<int64_t> b_strides = BroadcastStrides(b_batch, batch);
    const std::vector<int64_t> out_strides = Strides(batch);
    auto run_one = [&](int64_t index, const ThreadPool* pool) {
      int64_t a_off = 0, b_off = 0;
      for (size_t d = 0; d < batch.size(); ++d) {
        const int64_t i = (index / out_strides[d]) % batch[d];
        a_off += i * a_strides[d];
        b_off += i * b_strides[d];
      }
      linalg::ParallelGemm<T>(pool, false, false, m, n, k, T(1), a_data + a_off * m * k, k, b_data + b_off * k * n,
                              n, T(0), y + index * m * n, n);
    };
    if (batch_count >= ctx.pool->num_threads() && m * n * k * batch_count >= linalg::kParallelGemmMinMacs) {
      ctx.pool->ParallelFor(batch_count, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) run_one(i, nullptr);
      });
    } else {
      for (int64_t i = 0; i < batch_count; ++i) run_one(i, ctx.pool);
    }
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateGemmKernel(const ir::Node& node) {
  GemmParams p;
  QFUSE_ASSIGN_OR_RETURN(p.alpha, node.attrs().GetFloat("alpha", 1.0f));
  QFUSE_ASSIGN_OR_RETURN(p.beta, node.attrs().GetFloat("beta", 1.0f));
  QFUSE_ASSIGN_OR_RETURN(int64_t trans_a, node.attrs().GetInt("transA", 0));
  QFUSE_ASSIGN_OR_RETURN(int64_t trans_b, node.attrs().GetInt("transB", 0));
  p.trans_a = trans_a != 0;
  p.trans_b = trans_b != 0;
  return std::make_unique<GemmKernel>(p);
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateMatMulKernel(const ir::Node& node) {
  return std::make_unique<MatMulKernel>();
}

}  // namespace qfuse::runtime::kernels
