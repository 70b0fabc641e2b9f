#include "runtime/kernels/quant/quant_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "numerics/requantize.h"

namespace qfuse::runtime::kernels::quant {

bool IsQuantizedByteType(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }

int64_t TypeMin(DataType t) {
  switch (t) {
    case DataType::kInt8: return std::numeric_limits<int8_t>::lowest();
    case DataType::kUint8: return 0;
    default: return std::numeric_limits<int32_t>::lowest();
  }
}

int64_t TypeMax(DataType t) {
  switch (t) {
    case DataType::kInt8: return std::numeric_limits<int8_t>::max();
    case DataType::kUint8: return std::numeric_limits<uint8_t>::max();
    default: return std::numeric_limits<int32_t>::max();
  }
}

namespace {

absl::Status CheckCount(const Tensor& t, int64_t count, const std::string& what) {
  if (t.rank() > 1 || (t.num_elements() != 1 && t.num_elements() != count)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has shape ", ir::DimsToString(t.dims()),
                                                   "; expected a scalar or 1-D of ", count, " values"));
  }
  return absl::OkStatus();
}

}  // namespace

const Tensor* OptionalInput(absl::Span<const Tensor* const> inputs, int index) {
  return index >= 0 && index < static_cast<int>(inputs.size()) ? inputs[index] : nullptr;
}

absl::StatusOr<std::vector<float>> ReadScales(const Tensor& t, int64_t count, const std::string& what) {
  if (t.dtype() != DataType::kFloat32) {
    return absl::UnimplementedError(absl::StrCat(what, " has type ", ir::DataTypeName(t.dtype()), "; expected FLOAT"));
  }
  if (absl::Status s = CheckCount(t, count, what); !s.ok()) return s;
  std::vector<float> out(t.values<float>().begin(), t.values<float>().end());
  for (float s : out) {
    if (!(s > 0.0f) || !std::isfinite(s)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " contains ", s, "; scales must be positive and finite"));
    }
  }
  return out;
}

absl::StatusOr<std::vector<int32_t>> ReadZeroPoints(const Tensor* t, int64_t count, DataType dtype,
                                                    const std::string& what) {
  if (t == nullptr) return std::vector<int32_t>{0};
  if (dtype != DataType::kUndefined && t->dtype() != dtype) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has type ", ir::DataTypeName(t->dtype()), "; expected ",
                                                   ir::DataTypeName(dtype)));
  }
  if (absl::Status s = CheckCount(*t, count, what); !s.ok()) return s;
  std::vector<int32_t> out;
  switch (t->dtype()) {
    case DataType::kInt8:
      for (int8_t v : t->values<int8_t>()) out.push_back(v);
      break;
    case DataType::kUint8:
      for (uint8_t v : t->values<uint8_t>()) out.push_back(v);
      break;
    case DataType::kInt32:
      for (int32_t v : t->values<int32_t>()) out.push_back(v);
      break;
    default:
      return absl::UnimplementedError(absl::StrCat(what, " has unsupported type ", ir::DataTypeName(t->dtype())));
  }
  return out;
}

absl::StatusOr<OutputQuant> ReadOutputQuant(const Tensor& y_scale, const Tensor* y_zero_point) {
  OutputQuant y;
  QFUSE_ASSIGN_OR_RETURN(const std::vector<float> scale, ReadScales(y_scale, 1, "y_scale"));
  y.scale = scale[0];
  y.type = y_zero_point != nullptr ? y_zero_point->dtype() : DataType::kUint8;
  if (!IsQuantizedByteType(y.type)) {
    return absl::UnimplementedError(absl::StrCat("y_zero_point has type ", ir::DataTypeName(y.type)));
  }
  QFUSE_ASSIGN_OR_RETURN(const std::vector<int32_t> zps, ReadZeroPoints(y_zero_point, 1, y.type, "y_zero_point"));
  y.zero_point = zps[0];
  return y;
}

namespace {

template <typename T>
int32_t Centered(const T* w, const WeightsView& v, int64_t k, int64_t n) {
  const int32_t zp = v.zero_points.size() == 1 ? v.zero_points[0] : v.zero_points[n];
  return static_cast<int32_t>(w[v.offset + k * v.stride_k + n * v.stride_n]) - zp;
}

template <typename T>
PreparedWeights PrepareTyped(const T* w, const WeightsView& v) {
  PreparedWeights p;
  p.k = v.k;
  p.n = v.n;
  CenteredWeights<T> centred;
  centred.b = w + v.offset;
  centred.k = v.k;
  centred.n = v.n;
  centred.stride_k = v.stride_k;
  centred.stride_n = v.stride_n;
  centred.zero_points = v.zero_points.data();
  centred.zero_point_per_column = v.zero_points.size() > 1;
  // The int16 copy for the AVX2 madd path, its only reader.
  centred.with_wide = v.scope == PackingScope::kAnyIsa || BestInt8GemmIsa() == Int8GemmIsa::kAvx2;
  std::optional<PackedInt8Weights> packed = PackCenteredInt8Weights(centred, &p.max_abs);
  if (packed.has_value()) {
    p.fits_int8 = true;
    p.packed = std::move(*packed);
    return p;
  }
  p.wide.resize(v.k * v.n);
  for (int64_t n = 0; n < v.n; ++n) {
    for (int64_t k = 0; k < v.k; ++k) p.wide[n * v.k + k] = Centered(w, v, k, n);
  }
  return p;
}

// The portable path: uint32 sums (modulo 2^32, like the fast paths).
template <typename A>
void WideGemm(const Int8GemmArgs& args, const PreparedWeights& w) {
  const A* a = static_cast<const A*>(args.a);
  for (int64_t m = 0; m < args.m; ++m) {
    const int32_t zp = args.a_row_zero_points != nullptr ? args.a_row_zero_points[m] : args.a_zero_point;
    const A* row = a + m * args.lda;
    for (int64_t n = 0; n < w.n; ++n) {
      const int32_t* col = w.wide.data() + n * w.k;
      uint32_t acc = 0;
      for (int64_t k = 0; k < w.k; ++k) {
        acc += static_cast<uint32_t>(static_cast<int32_t>(row[k]) - zp) * static_cast<uint32_t>(col[k]);
      }
      args.c[m * args.ldc + n] = static_cast<int32_t>(acc);
    }
  }
}

}  // namespace

PreparedWeights PrepareWeights(const WeightsView& view) {
  if (view.tensor->dtype() == DataType::kInt8) return PrepareTyped(view.tensor->data<int8_t>(), view);
  return PrepareTyped(view.tensor->data<uint8_t>(), view);
}

void IntegerGemm(const Int8GemmArgs& args, const PreparedWeights& w) {
  if (w.fits_int8) {
    Int8Gemm(args, w.packed);
  } else if (args.a_signed) {
    WideGemm<int8_t>(args, w);
  } else {
    WideGemm<uint8_t>(args, w);
  }
}

absl::Status CheckGemmAccumulatorBound(DataType a_type, absl::Span<const int32_t> a_zps,
                                       absl::Span<const PreparedWeights> weights, int64_t max_abs_bias,
                                       const std::string& what) {
  int64_t max_abs_a = 0, max_abs_w = 0, k = 0;
  for (int32_t zp : a_zps) max_abs_a = std::max(max_abs_a, numerics::MaxAbsCentered(TypeMin(a_type), TypeMax(a_type), zp));
  for (const PreparedWeights& w : weights) {
    max_abs_w = std::max(max_abs_w, w.max_abs);
    k = w.k;
  }
  return numerics::CheckAccumulatorFitsInt32({k, max_abs_a, max_abs_w, max_abs_bias}, what);
}

}  // namespace qfuse::runtime::kernels::quant
