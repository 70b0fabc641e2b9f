#include "runtime/reference/pool.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace qfuse::runtime::reference {
namespace {

using ir::DataType;
using ir::Tensor;

std::vector<int64_t> OrDefault(const std::vector<int64_t>& values, size_t size, int64_t fallback) {
  return values.empty() ? std::vector<int64_t>(size, fallback) : values;
}

}  // namespace

absl::StatusOr<Tensor> Pool(const Tensor& x, const PoolParams& params) {
  const size_t rank = params.kernel_shape.size();
  if (x.dtype() != DataType::kFloat32 || x.rank() != static_cast<int64_t>(rank) + 2 || rank < 1 || rank > 3) {
    return absl::InvalidArgumentError(absl::StrCat("pool of ", ir::DataTypeName(x.dtype()), ir::DimsToString(x.dims()),
                                                   " with a ", rank, "-D kernel: need FLOAT [N, C, 1-3 dims]"));
  }
  const std::vector<int64_t> strides = OrDefault(params.strides, rank, 1);
  const std::vector<int64_t> dilations = OrDefault(params.dilations, rank, 1);
  const std::vector<int64_t> pads = OrDefault(params.pads, 2 * rank, 0);
  if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) {
    return absl::InvalidArgumentError("pool: strides, dilations or pads do not match the kernel's rank");
  }
  std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end()), out;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = (params.kernel_shape[d] - 1) * dilations[d] + 1;
    out.push_back((in[d] + pads[d] + pads[rank + d] - extent) / strides[d] + 1);
    if (out[d] < 1 || strides[d] < 1 || dilations[d] < 1) {
      return absl::InvalidArgumentError(absl::StrCat("pool: no output along dim ", d));
    }
  }
  std::vector<int64_t> dims = {x.dims()[0], x.dims()[1]};
  dims.insert(dims.end(), out.begin(), out.end());
  Tensor y(DataType::kFloat32, dims);
  const int64_t planes = x.dims()[0] * x.dims()[1], in_size = ir::NumElements(in), out_size = ir::NumElements(out);
  const int64_t taps = ir::NumElements(params.kernel_shape);
  std::vector<int64_t> o(rank), t(rank);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const float* image = x.data<float>() + plane * in_size;
    for (int64_t pos = 0; pos < out_size; ++pos) {
      for (int64_t d = rank - 1, rest = pos; d >= 0; --d) {
        o[d] = rest % out[d];
        rest /= out[d];
      }
      float best = std::numeric_limits<float>::lowest();
      double sum = 0;
      int64_t count = 0;
      for (int64_t tap = 0; tap < taps; ++tap) {
        int64_t index = 0;
        bool inside = true;
        for (int64_t d = rank - 1, rest = tap; d >= 0; --d) {
          t[d] = rest % params.kernel_shape[d];
          rest /= params.kernel_shape[d];
        }
        for (size_t d = 0; d < rank && inside; ++d) {
          const int64_t i = o[d] * strides[d] - pads[d] + t[d] * dilations[d];
          inside = i >= 0 && i < in[d];
          index = index * in[d] + i;
        }
        if (!inside) continue;
        best = std::max(best, image[index]);
        sum += image[index];
        ++count;
      }
      const int64_t divisor = params.count_include_pad ? taps : count;
      y.data<float>()[plane * out_size + pos] =
          params.kind == PoolParams::Kind::kMax ? best : static_cast<float>(sum / std::max<int64_t>(divisor, 1));
    }
  }
  return y;
}

}  // namespace qfuse::runtime::reference
