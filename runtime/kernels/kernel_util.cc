#include "runtime/kernels/kernel_util.h"

#include "absl/strings/str_cat.h"

namespace qfuse::runtime::kernels {

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> ReadInt64s(const Tensor& t, const std::string& what) {
  if (t.rank() > 1) return absl::InvalidArgumentError(absl::StrCat(what, " must be a scalar or 1-D"));
  std::vector<int64_t> out;
  out.reserve(t.num_elements());
  if (t.dtype() == DataType::kInt64) {
    for (int64_t v : t.values<int64_t>()) out.push_back(v);
  } else if (t.dtype() == DataType::kInt32) {
    for (int32_t v : t.values<int32_t>()) out.push_back(v);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be INT64 or INT32, got ", ir::DataTypeName(t.dtype())));
  }
  return out;
}

absl::StatusOr<float> ReadScalarAsFloat(const Tensor& t, const std::string& what) {
  if (t.num_elements() != 1) return absl::InvalidArgumentError(absl::StrCat(what, " must have one element"));
  switch (t.dtype()) {
    case DataType::kFloat32: return t.data<float>()[0];
    case DataType::kFloat64: return static_cast<float>(t.data<double>()[0]);
    case DataType::kInt64: return static_cast<float>(t.data<int64_t>()[0]);
    case DataType::kInt32: return static_cast<float>(t.data<int32_t>()[0]);
    case DataType::kInt8: return static_cast<float>(t.data<int8_t>()[0]);
    case DataType::kUint8: return static_cast<float>(t.data<uint8_t>()[0]);
    default:
      return absl::InvalidArgumentError(absl::StrCat(what, ": unsupported type ", ir::DataTypeName(t.dtype())));
  }
}

std::vector<int64_t> Strides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(absl::Span<const int64_t> a, absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes ", ir::DimsToString(a), " and ", ir::DimsToString(b), " do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(absl::Span<const int64_t> dims, absl::Span<const int64_t> out_dims) {
  std::vector<int64_t> own = Strides(dims);
  std::vector<int64_t> out(out_dims.size(), 0);
  const size_t offset = out_dims.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) out[offset + i] = dims[i] == 1 ? 0 : own[i];
  return out;
}

absl::Status RequireInputs(absl::Span<const Tensor* const> inputs, size_t count) {
  if (inputs.size() < count) {
    return absl::InvalidArgumentError(absl::StrCat("expected at least ", count, " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < count; ++i) {
    if (inputs[i] == nullptr) return absl::InvalidArgumentError(absl::StrCat("input ", i, " is required"));
  }
  return absl::OkStatus();
}

absl::Status RequireSameType(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() == b.dtype()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " types differ: ", ir::DataTypeName(a.dtype()), " and ",
                                                 ir::DataTypeName(b.dtype())));
}

}  // namespace qfuse::runtime::kernels
