#include "runtime/reference/conv.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace qfuse::runtime::reference {
namespace {

using ir::DataType;
using ir::Tensor;

// One convolution's sizes. "Image" is the Conv input / ConvTranspose output, "col" the grid
// of kernel positions (Conv output / ConvTranspose input); image coordinate of col coordinate
// o and tap t along a dim: o * stride - pad_begin + t * dilation.
struct Geometry {
  int64_t batch = 0, cin = 0, cout = 0, group = 1;
  std::vector<int64_t> image, col, kernel, strides, dilations, pad_begin;
};

// Row-major coordinates of flat index `flat` over `dims`.
void Coordinates(int64_t flat, const std::vector<int64_t>& dims, std::vector<int64_t>* coords) {
  coords->resize(dims.size());
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    (*coords)[d] = flat % dims[d];
    flat /= dims[d];
  }
}

// Flat image index of col coordinates `o` and tap `t`, or -1 in the padding.
int64_t ImageIndex(const Geometry& g, const std::vector<int64_t>& o, const std::vector<int64_t>& t) {
  int64_t index = 0;
  for (size_t d = 0; d < g.image.size(); ++d) {
    const int64_t i = o[d] * g.strides[d] - g.pad_begin[d] + t[d] * g.dilations[d];
    if (i < 0 || i >= g.image[d]) return -1;
    index = index * g.image[d] + i;
  }
  return index;
}

absl::StatusOr<std::vector<int64_t>> PerDim(const std::vector<int64_t>& values, size_t rank, int64_t fallback,
                                            const char* name) {
  if (values.empty()) return std::vector<int64_t>(rank, fallback);
  if (values.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(name, " has ", values.size(), " values for ", rank, " dims"));
  }
  return values;
}

// Sizes of x [N, C, spatial...] and w (Conv: [M, C / group, kernel...]; ConvTranspose:
// [C, M / group, kernel...]) under `params`.
absl::StatusOr<Geometry> Resolve(const Tensor& x, const Tensor& w, const ConvParams& params, bool transpose) {
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x.dims()), " and weights ",
                                                   ir::DimsToString(w.dims()), ": need the same rank, 3 to 5"));
  }
  Geometry g;
  const size_t rank = x.rank() - 2;
  g.batch = x.dims()[0];
  g.cin = x.dims()[1];
  g.group = params.group;
  const bool agree = transpose ? w.dims()[0] == g.cin && g.cin % g.group == 0
                               : w.dims()[1] * g.group == g.cin && w.dims()[0] % g.group == 0;
  if (g.group < 1 || !agree) {
    return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x.dims()), ", weights ",
                                                   ir::DimsToString(w.dims()), " and group ", g.group,
                                                   " do not agree"));
  }
  g.cout = transpose ? w.dims()[1] * g.group : w.dims()[0];
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  QFUSE_ASSIGN_OR_RETURN(g.strides, PerDim(params.strides, rank, 1, "strides"));
  QFUSE_ASSIGN_OR_RETURN(g.dilations, PerDim(params.dilations, rank, 1, "dilations"));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> pads, PerDim(params.pads, 2 * rank, 0, "pads"));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> output_padding,
                         PerDim(params.output_padding, rank, 0, "output_padding"));
  g.pad_begin.assign(pads.begin(), pads.begin() + rank);
  const std::vector<int64_t> in(x.dims().begin() + 2, x.dims().end());
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;
    const int64_t pads_sum = pads[d] + pads[rank + d];
    if (transpose) {
      g.col.push_back(in[d]);
      g.image.push_back(g.strides[d] * (in[d] - 1) + output_padding[d] + extent - pads_sum);
    } else {
      g.image.push_back(in[d]);
      g.col.push_back((in[d] + pads_sum - extent) / g.strides[d] + 1);
    }
    if (g.image[d] < 1 || g.col[d] < 1 || g.strides[d] < 1 || g.dilations[d] < 1) {
      return absl::InvalidArgumentError(absl::StrCat("dim ", d, ": no output for input ", ir::DimsToString(x.dims()),
                                                     " and weights ", ir::DimsToString(w.dims())));
    }
  }
  return g;
}

std::vector<int64_t> Dims(const Geometry& g, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> dims = {g.batch, g.cout};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return dims;
}

// out[n][m][o] = sum (x - x_zp) * (w[m][c][t] - w_zp(m)) over the Conv taps, in Acc.
template <typename Acc, typename X, typename W>
void ConvAccumulate(const Geometry& g, const X* x, Acc x_zp, const W* w, absl::Span<const int32_t> w_zp, Acc* out) {
  const int64_t cin_g = g.cin / g.group, cout_g = g.cout / g.group;
  const int64_t image_size = ir::NumElements(g.image), col_size = ir::NumElements(g.col);
  const int64_t taps = ir::NumElements(g.kernel);
  std::vector<int64_t> o, t;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.cout; ++m) {
      const Acc zp = w_zp.empty() ? Acc(0) : static_cast<Acc>(w_zp.size() == 1 ? w_zp[0] : w_zp[m]);
      const int64_t first_channel = (m / cout_g) * cin_g;
      for (int64_t pos = 0; pos < col_size; ++pos) {
        Coordinates(pos, g.col, &o);
        Acc acc = 0;
        for (int64_t c = 0; c < cin_g; ++c) {
          const X* image = x + (n * g.cin + first_channel + c) * image_size;
          const W* kernel = w + (m * cin_g + c) * taps;
          for (int64_t tap = 0; tap < taps; ++tap) {
            Coordinates(tap, g.kernel, &t);
            const int64_t i = ImageIndex(g, o, t);
            if (i >= 0) acc += (static_cast<Acc>(image[i]) - x_zp) * (static_cast<Acc>(kernel[tap]) - zp);
          }
        }
        out[(n * g.cout + m) * col_size + pos] = acc;
      }
    }
  }
}

absl::Status CheckFloat(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", ir::DataTypeName(t.dtype()), ", not FLOAT"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const float*> BiasData(const Tensor* bias, int64_t channels) {
  if (bias == nullptr) return nullptr;
  QFUSE_RETURN_IF_ERROR(CheckFloat(*bias, "bias"));
  if (bias->num_elements() != channels) {
    return absl::InvalidArgumentError(absl::StrCat("bias ", ir::DimsToString(bias->dims()), " for ", channels,
                                                   " output channels"));
  }
  return bias->data<float>();
}

template <typename X, typename W>
void IntegerAccumulate(const Geometry& g, const Tensor& x, int32_t x_zp, const Tensor& w,
                       absl::Span<const int32_t> w_zp, int64_t* out) {
  ConvAccumulate<int64_t>(g, x.data<X>(), int64_t{x_zp}, w.data<W>(), w_zp, out);
}

}  // namespace

absl::StatusOr<Tensor> Conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvParams& params) {
  QFUSE_RETURN_IF_ERROR(CheckFloat(x, "input"));
  QFUSE_RETURN_IF_ERROR(CheckFloat(w, "weights"));
  QFUSE_ASSIGN_OR_RETURN(Geometry g, Resolve(x, w, params, /*transpose=*/false));
  QFUSE_ASSIGN_OR_RETURN(const float* b, BiasData(bias, g.cout));
  Tensor y(DataType::kFloat32, Dims(g, g.col));
  std::vector<double> acc(y.num_elements());
  ConvAccumulate<double>(g, x.data<float>(), 0.0, w.data<float>(), {}, acc.data());
  const int64_t plane = ir::NumElements(g.col);
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    y.data<float>()[i] = static_cast<float>(acc[i] + (b ? b[(i / plane) % g.cout] : 0.0));
  }
  return y;
}

absl::StatusOr<Tensor> ConvTranspose(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvParams& params) {
  QFUSE_RETURN_IF_ERROR(CheckFloat(x, "input"));
  QFUSE_RETURN_IF_ERROR(CheckFloat(w, "weights"));
  QFUSE_ASSIGN_OR_RETURN(Geometry g, Resolve(x, w, params, /*transpose=*/true));
  QFUSE_ASSIGN_OR_RETURN(const float* b, BiasData(bias, g.cout));
  Tensor y(DataType::kFloat32, Dims(g, g.image));
  const int64_t cin_g = g.cin / g.group, cout_g = g.cout / g.group;
  const int64_t image_size = ir::NumElements(g.image), col_size = ir::NumElements(g.col);
  const int64_t taps = ir::NumElements(g.kernel);
  std::vector<double> acc(y.num_elements());
  for (int64_t i = 0; i < y.num_elements(); ++i) acc[i] = b ? b[(i / image_size) % g.cout] : 0.0;
  std::vector<int64_t> o, t;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < g.cin; ++c) {
      const int64_t first_out = (c / cin_g) * cout_g;
      for (int64_t pos = 0; pos < col_size; ++pos) {
        Coordinates(pos, g.col, &o);
        const double xv = x.data<float>()[(n * g.cin + c) * col_size + pos];
        for (int64_t m = 0; m < cout_g; ++m) {
          const float* kernel = w.data<float>() + (c * cout_g + m) * taps;
          double* image = acc.data() + (n * g.cout + first_out + m) * image_size;
          for (int64_t tap = 0; tap < taps; ++tap) {
            Coordinates(tap, g.kernel, &t);
            const int64_t i = ImageIndex(g, o, t);
            if (i >= 0) image[i] += xv * kernel[tap];
          }
        }
      }
    }
  }
  for (int64_t i = 0; i < y.num_elements(); ++i) y.data<float>()[i] = static_cast<float>(acc[i]);
  return y;
}

absl::StatusOr<Tensor> ConvIntegerAccumulators(const Tensor& x, int32_t x_zero_point, const Tensor& w,
                                               absl::Span<const int32_t> w_zero_points, const ConvParams& params) {
  QFUSE_ASSIGN_OR_RETURN(Geometry g, Resolve(x, w, params, /*transpose=*/false));
  if (w_zero_points.size() != 1 && static_cast<int64_t>(w_zero_points.size()) != g.cout) {
    return absl::InvalidArgumentError(absl::StrCat(w_zero_points.size(), " weight zero points for ", g.cout,
                                                   " output channels"));
  }
  Tensor y(DataType::kInt64, Dims(g, g.col));
  int64_t* out = y.data<int64_t>();
  const bool x8 = x.dtype() == DataType::kInt8, w8 = w.dtype() == DataType::kInt8;
  const bool x_ok = x8 || x.dtype() == DataType::kUint8, w_ok = w8 || w.dtype() == DataType::kUint8;
  if (!x_ok || !w_ok) {
    return absl::InvalidArgumentError(absl::StrCat("integer Conv of ", ir::DataTypeName(x.dtype()), " and ",
                                                   ir::DataTypeName(w.dtype()), ": INT8 or UINT8 only"));
  }
  if (x8 && w8) IntegerAccumulate<int8_t, int8_t>(g, x, x_zero_point, w, w_zero_points, out);
  if (x8 && !w8) IntegerAccumulate<int8_t, uint8_t>(g, x, x_zero_point, w, w_zero_points, out);
  if (!x8 && w8) IntegerAccumulate<uint8_t, int8_t>(g, x, x_zero_point, w, w_zero_points, out);
  if (!x8 && !w8) IntegerAccumulate<uint8_t, uint8_t>(g, x, x_zero_point, w, w_zero_points, out);
  return y;
}

}  // namespace qfuse::runtime::reference
