// Range (start, limit, delta: ceil((limit - start) / delta) values, each the previous plus
// delta, as onnxruntime accumulates them) and ScatterND (a copy of data with the slices that
// `indices` address replaced by, or reduced with, `updates`).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/checked_math.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"

namespace qfuse::runtime::kernels {
namespace {

// The one value of a scalar (or one-element) tensor.
absl::StatusOr<const void*> ScalarOf(const Tensor& t, const char* what) {
  if (t.num_elements() != 1 || t.rank() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Range ", what, " must be a scalar, got ", ir::DimsToString(t.dims())));
  }
  return t.raw_data();
}

class RangeKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 3));
    QFUSE_RETURN_IF_ERROR(RequireSameType(*inputs[0], *inputs[1]));
    QFUSE_RETURN_IF_ERROR(RequireSameType(*inputs[0], *inputs[2]));
    switch (inputs[0]->dtype()) {
      case DataType::kFloat32:
        return Fill<float>(inputs, outputs);
      case DataType::kFloat64:
        return Fill<double>(inputs, outputs);
      case DataType::kInt16:
        return Fill<int16_t>(inputs, outputs);
      case DataType::kInt32:
        return Fill<int32_t>(inputs, outputs);
      case DataType::kInt64:
        return Fill<int64_t>(inputs, outputs);
      default:
        return absl::UnimplementedError(absl::StrCat("Range of ", ir::DataTypeName(inputs[0]->dtype())));
    }
  }

 private:
  template <typename T>
  static absl::Status Fill(absl::Span<const Tensor* const> inputs, absl::Span<Tensor> outputs) {
    QFUSE_ASSIGN_OR_RETURN(const void* s, ScalarOf(*inputs[0], "start"));
    QFUSE_ASSIGN_OR_RETURN(const void* l, ScalarOf(*inputs[1], "limit"));
    QFUSE_ASSIGN_OR_RETURN(const void* d, ScalarOf(*inputs[2], "delta"));
    T start = *static_cast<const T*>(s);
    const T limit = *static_cast<const T*>(l);
    const T delta = *static_cast<const T*>(d);
    if (delta == T(0)) return absl::InvalidArgumentError("Range delta must not be zero");
    // The count: floats as onnxruntime takes it (the difference in the element type, then
    // divided in double); integers exactly (in 128 bits, so no endpoint overflows).
    double count = 0;
    if constexpr (std::is_integral_v<T>) {
      const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
      const __int128 step = delta;
      __int128 q = span / step;
      if (q * step != span && ((span > 0) == (step > 0))) ++q;  // ceil of a positive quotient
      count = static_cast<double>(q);
    } else {
      count = std::ceil(static_cast<double>(static_cast<T>(limit - start)) / static_cast<double>(delta));
    }
    if (!(count < static_cast<double>(int64_t{1} << 40))) {
      return absl::InvalidArgumentError(absl::StrCat("Range of ", count, " values"));
    }
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::CreateUninitialized(inputs[0]->dtype(), {n}));  // all written
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = start;
      if (i + 1 < n) start = static_cast<T>(start + delta);  // never past the last value (no overflow)
    }
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }
};

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

class ScatterNdKernel : public Kernel {
 public:
  explicit ScatterNdKernel(Reduction reduction) : reduction_(reduction) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 3));
    const Tensor& data = *inputs[0];
    const Tensor& indices = *inputs[1];
    const Tensor& updates = *inputs[2];
    QFUSE_RETURN_IF_ERROR(RequireSameType(data, updates, "data and updates"));
    if (indices.dtype() != DataType::kInt64 || indices.rank() < 1) {
      return absl::InvalidArgumentError("ScatterND indices must be INT64 of rank >= 1");
    }
    const int64_t k = indices.dims().back();
    if (k < 1 || k > data.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("ScatterND index length ", k, " for data of rank ", data.rank()));
    }
    // updates: indices.dims()[:-1] + data.dims()[k:]
    std::vector<int64_t> want(indices.dims().begin(), indices.dims().end() - 1);
    want.insert(want.end(), data.dims().begin() + k, data.dims().end());
    if (updates.dims() != want) {
      return absl::InvalidArgumentError(
          absl::StrCat("ScatterND updates ", ir::DimsToString(updates.dims()), ", expected ", ir::DimsToString(want)));
    }
    int64_t slice = 1;
    for (int64_t d = k; d < data.rank(); ++d) slice *= data.dims()[d];
    const int64_t count = indices.num_elements() / k;
    // Element offsets of the addressed slices, checked before anything is written.
    std::vector<int64_t> offsets(count);
    const int64_t* idx = indices.data<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      int64_t offset = 0;
      for (int64_t d = 0; d < k; ++d) {
        const int64_t dim = data.dims()[d];
        int64_t v = idx[i * k + d];
        if (v < 0) v += dim;
        if (v < 0 || v >= dim) {
          return absl::InvalidArgumentError(
              absl::StrCat("ScatterND index ", idx[i * k + d], " out of range for dim ", d, " of size ", dim));
        }
        offset = offset * dim + v;
      }
      offsets[i] = offset * slice;
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(data.dtype(), data.dims()));
    std::memcpy(out.raw_data(), data.raw_data(), data.byte_size());
    if (reduction_ == Reduction::kNone) {
      const size_t esize = ir::ElementSize(data.dtype());
      uint8_t* dst = static_cast<uint8_t*>(out.raw_data());
      const uint8_t* src = static_cast<const uint8_t*>(updates.raw_data());
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + offsets[i] * esize, src + i * slice * esize, slice * esize);
      }
      outputs[0] = std::move(out);
      return absl::OkStatus();
    }
    const auto reduce = [&](auto tag) -> absl::Status {
      using T = decltype(tag);
      T* dst = out.data<T>();
      const T* src = updates.data<T>();
      for (int64_t i = 0; i < count; ++i) {
        T* row = dst + offsets[i];
        const T* u = src + i * slice;
        for (int64_t j = 0; j < slice; ++j) {
          switch (reduction_) {
            case Reduction::kAdd:
              row[j] = static_cast<T>(row[j] + u[j]);
              break;
            case Reduction::kMul:
              row[j] = static_cast<T>(row[j] * u[j]);
              break;
            case Reduction::kMax:
              row[j] = std::max(row[j], u[j]);
              break;
            case Reduction::kMin:
              row[j] = std::min(row[j], u[j]);
              break;
            case Reduction::kNone:
              row[j] = u[j];
              break;
          }
        }
      }
      return absl::OkStatus();
    };
    absl::Status status;
    switch (data.dtype()) {
      case DataType::kFloat32:
        status = reduce(float{});
        break;
      case DataType::kFloat64:
        status = reduce(double{});
        break;
      case DataType::kInt32:
        status = reduce(int32_t{});
        break;
      case DataType::kInt64:
        status = reduce(int64_t{});
        break;
      default:
        return absl::UnimplementedError(absl::StrCat("ScatterND reduction of ", ir::DataTypeName(data.dtype())));
    }
    QFUSE_RETURN_IF_ERROR(status);
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

 private:
  Reduction reduction_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateRangeKernel(const ir::Node& node) {
  return std::unique_ptr<Kernel>(new RangeKernel());
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateScatterNdKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(const std::string reduction, node.attrs().GetString("reduction", "none"));
  Reduction r;
  if (reduction == "none") {
    r = Reduction::kNone;
  } else if (reduction == "add") {
    r = Reduction::kAdd;
  } else if (reduction == "mul") {
    r = Reduction::kMul;
  } else if (reduction == "max") {
    r = Reduction::kMax;
  } else if (reduction == "min") {
    r = Reduction::kMin;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("ScatterND reduction '", reduction, "'"));
  }
  return std::unique_ptr<Kernel>(new ScatterNdKernel(r));
}

}  // namespace qfuse::runtime::kernels
