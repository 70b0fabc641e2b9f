#include "runtime/reference/gemm.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace qfuse::runtime::reference {
namespace {

using ir::DataType;
using ir::Tensor;

absl::Status CheckFloat(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", ir::DataTypeName(t.dtype()), ", not FLOAT"));
  }
  return absl::OkStatus();
}

}  // namespace

void Gemm(const GemmParams& p, const float* a, const float* b, const float* c, double* out) {
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        const double av = p.trans_a ? a[q * p.lda + i] : a[i * p.lda + q];
        const double bv = p.trans_b ? b[j * p.ldb + q] : b[q * p.ldb + j];
        sum += av * bv;
      }
      const double c0 = p.beta == 0 ? 0.0 : p.beta * static_cast<double>(c[i * p.ldc + j]);
      out[i * p.ldc + j] = p.alpha * sum + c0;
    }
  }
}

absl::StatusOr<Tensor> GemmOp(const Tensor& a, const Tensor& b, const Tensor* c, const GemmAttributes& attributes) {
  QFUSE_RETURN_IF_ERROR(CheckFloat(a, "A"));
  QFUSE_RETURN_IF_ERROR(CheckFloat(b, "B"));
  if (a.rank() != 2 || b.rank() != 2) return absl::InvalidArgumentError("Gemm: A and B must be 2-D");
  GemmParams p;
  p.trans_a = attributes.trans_a;
  p.trans_b = attributes.trans_b;
  p.m = p.trans_a ? a.dims()[1] : a.dims()[0];
  p.k = p.trans_a ? a.dims()[0] : a.dims()[1];
  p.n = p.trans_b ? b.dims()[0] : b.dims()[1];
  if ((p.trans_b ? b.dims()[1] : b.dims()[0]) != p.k) {
    return absl::InvalidArgumentError(absl::StrCat("Gemm: A ", ir::DimsToString(a.dims()), " and B ",
                                                   ir::DimsToString(b.dims()), " do not multiply"));
  }
  p.lda = a.dims()[1];
  p.ldb = b.dims()[1];
  p.ldc = p.n;
  p.alpha = attributes.alpha;
  // C broadcast to [m, n]: a dim of C is either the full size or 1 (right-aligned, rank <= 2).
  std::vector<float> c_full;
  if (c != nullptr && attributes.beta != 0) {
    QFUSE_RETURN_IF_ERROR(CheckFloat(*c, "C"));
    std::vector<int64_t> cd(c->dims());
    if (cd.size() > 2) return absl::InvalidArgumentError("Gemm: C has rank > 2");
    while (cd.size() < 2) cd.insert(cd.begin(), 1);
    if ((cd[0] != 1 && cd[0] != p.m) || (cd[1] != 1 && cd[1] != p.n)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gemm: C ", ir::DimsToString(c->dims()), " does not broadcast to [", p.m, ",", p.n, "]"));
    }
    c_full.resize(p.m * p.n);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) c_full[i * p.n + j] = c->data<float>()[(cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j)];
    }
    p.beta = attributes.beta;
  }
  std::vector<double> out(p.m * p.n);
  Gemm(p, a.data<float>(), b.data<float>(), c_full.data(), out.data());
  Tensor y(DataType::kFloat32, {p.m, p.n});
  for (int64_t i = 0; i < p.m * p.n; ++i) y.data<float>()[i] = static_cast<float>(out[i]);
  return y;
}

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b) {
  QFUSE_RETURN_IF_ERROR(CheckFloat(a, "A"));
  QFUSE_RETURN_IF_ERROR(CheckFloat(b, "B"));
  if (a.rank() < 2 || b.rank() < 2) return absl::InvalidArgumentError("MatMul: operands must have rank >= 2");
  const int64_t m = a.dims()[a.rank() - 2], k = a.dims().back(), n = b.dims().back();
  if (b.dims()[b.rank() - 2] != k) {
    return absl::InvalidArgumentError(absl::StrCat("MatMul: A ", ir::DimsToString(a.dims()), " and B ",
                                                   ir::DimsToString(b.dims()), " do not multiply"));
  }
  // Batch dims, right-aligned: each is the operands' common size or broadcast from 1.
  const int64_t a_batch_rank = a.rank() - 2, b_batch_rank = b.rank() - 2;
  const int64_t rank = std::max(a_batch_rank, b_batch_rank);
  std::vector<int64_t> batch(rank), a_batch(rank, 1), b_batch(rank, 1);
  for (int64_t d = 0; d < rank; ++d) {
    if (d - (rank - a_batch_rank) >= 0) a_batch[d] = a.dims()[d - (rank - a_batch_rank)];
    if (d - (rank - b_batch_rank) >= 0) b_batch[d] = b.dims()[d - (rank - b_batch_rank)];
    if (a_batch[d] != b_batch[d] && a_batch[d] != 1 && b_batch[d] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("MatMul: batch dims of ", ir::DimsToString(a.dims()), " and ",
                                                     ir::DimsToString(b.dims()), " do not broadcast"));
    }
    batch[d] = a_batch[d] == 1 ? b_batch[d] : a_batch[d];
  }
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor y(DataType::kFloat32, out_dims);
  GemmParams p;
  p.m = m, p.n = n, p.k = k, p.lda = k, p.ldb = n, p.ldc = n;
  std::vector<double> out(m * n);
  const int64_t count = ir::NumElements(batch);
  for (int64_t index = 0; index < count; ++index) {
    // The operands' batch offsets: each batch coordinate, 0 along a broadcast dim.
    int64_t rest = index, a_offset = 0, b_offset = 0, a_stride = 1, b_stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t i = rest % batch[d];
      rest /= batch[d];
      a_offset += (a_batch[d] == 1 ? 0 : i) * a_stride;
      b_offset += (b_batch[d] == 1 ? 0 : i) * b_stride;
      a_stride *= a_batch[d];
      b_stride *= b_batch[d];
    }
    Gemm(p, a.data<float>() + a_offset * m * k, b.data<float>() + b_offset * k * n, nullptr, out.data());
    for (int64_t i = 0; i < m * n; ++i) y.data<float>()[index * m * n + i] = static_cast<float>(out[i]);
  }
  return y;
}

}  // namespace qfuse::runtime::reference
