// Resize (opset 13 form; Upsample and Resize-10/11 are rewritten to it at import).
// Mode linear on float32 [H, W] or [N, C, H, W] with N and C unscaled runs as onnxruntime's
// bilinear kernel (resize_bilinear.h; an output of the input's shape is the input), except
// where onnxruntime departs from ONNX (OutputLengthMatters). Else
// separable: one 1-D pass per resized axis, each output row a weighted sum of input rows
// (float) or a row copy (nearest, any dtype). Output sizes come from `sizes`, or
// floor(float(scale) * float(in)) from `scales` (float32 as in onnxruntime).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/resize_bilinear.h"
#include "runtime/kernels/shape/resize_taps.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/kernels/shape/shape_util.h"

namespace qfuse::runtime::kernels {
namespace {

// Reads a FLOAT or DOUBLE 1-D tensor (scales, roi) as doubles.
absl::StatusOr<std::vector<double>> ReadDoubles(const Tensor& t, const std::string& what) {
  std::vector<double> out;
  if (t.dtype() == DataType::kFloat32) {
    for (float v : t.values<float>()) out.push_back(v);
  } else if (t.dtype() == DataType::kFloat64) {
    for (double v : t.values<double>()) out.push_back(v);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, " must be FLOAT or DOUBLE, got ", ir::DataTypeName(t.dtype())));
  }
  return out;
}

const Tensor* NonEmpty(absl::Span<const Tensor* const> inputs, size_t i) {
  return i < inputs.size() && inputs[i] != nullptr && inputs[i]->num_elements() > 0 ? inputs[i] : nullptr;
}

// One pass along an axis viewed as [outer, in_d, inner] -> [outer, out_d, inner].
void InterpolateAxis(const ThreadPool& pool, const float* in, float* out, int64_t outer, int64_t in_d, int64_t out_d,
                     int64_t inner, const AxisTaps& t, float extrapolation) {
  const int taps = t.taps;
  if (inner == 1) {
    // Innermost axis: one scalar dot product per output, parallel over outer rows.
    pool.ParallelFor(outer, MinRowsPerChunk(out_d * 4 * (taps + 1)), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const float* src = in + o * in_d;
        float* dst = out + o * out_d;
        for (int64_t j = 0; j < out_d; ++j) {
          if (t.extrapolate[j]) {
            dst[j] = extrapolation;
            continue;
          }
          const int64_t* idx = &t.index[j * taps];
          const float* w = &t.weight[j * taps];
          float acc = w[0] * src[idx[0]];
          for (int tap = 1; tap < taps; ++tap) acc += w[tap] * src[idx[tap]];
          dst[j] = acc;
        }
      }
    });
    return;
  }
  pool.ParallelFor(outer * out_d, MinRowsPerChunk(inner * 4 * (taps + 1)), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t o = k / out_d;
      const int64_t j = k - o * out_d;
      float* dst = out + k * inner;
      if (t.extrapolate[j]) {
        std::fill(dst, dst + inner, extrapolation);
        continue;
      }
      const float* base = in + o * in_d * inner;
      const int64_t* idx = &t.index[j * taps];
      const float* w = &t.weight[j * taps];
      {
        const float* src = base + idx[0] * inner;
        const float w0 = w[0];
        for (int64_t i = 0; i < inner; ++i) dst[i] = w0 * src[i];
      }
      for (int tap = 1; tap < taps; ++tap) {
        if (w[tap] == 0.f) continue;
        const float* src = base + idx[tap] * inner;
        const float wt = w[tap];
        for (int64_t i = 0; i < inner; ++i) dst[i] += wt * src[i];
      }
    }
  });
}

// align_corners and pytorch_half_pixel read the resized length: onnxruntime takes the output
// size, ONNX scale * in. With scales given they can differ: align_corners wherever scale * in
// is not an integer (ONNX's test_resize_downsample_scales_linear_align_corners),
// pytorch_half_pixel where the output size is 1 and scale * in is not. There the ONNX form
// (ComputeAxisTaps) runs.
bool OutputLengthMatters(CoordinateMode mode, bool scales_given, const std::vector<double>& scales,
                         const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims) {
  if (!scales_given || (mode != CoordinateMode::kAlignCorners && mode != CoordinateMode::kPytorchHalfPixel)) {
    return false;
  }
  for (size_t d = 0; d < in_dims.size(); ++d) {
    const double length = scales[d] * static_cast<double>(in_dims[d]);
    if (length == static_cast<double>(out_dims[d])) continue;
    if (mode == CoordinateMode::kAlignCorners || out_dims[d] == 1) return true;
  }
  return false;
}

// Bilinear over the last two axes of `x` (rank 2 or 4) into `y`, `scales` the float32 scales
// of those axes.
void ResizeBilinear(const ThreadPool& pool, const ResizeParams& p, const Tensor& x, const float scales[2], Tensor& y) {
  const int64_t rank = x.rank();
  const int64_t in_h = x.dims()[rank - 2], in_w = x.dims()[rank - 1];
  const int64_t out_h = y.dims()[rank - 2], out_w = y.dims()[rank - 1];
  const int64_t planes = DimProduct(x.dims(), 0, rank - 2);
  const BilinearAxis ys = ComputeBilinearAxis(p.coordinate_mode, in_h, out_h, scales[0]);
  const BilinearAxis xs = ComputeBilinearAxis(p.coordinate_mode, in_w, out_w, scales[1]);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  constexpr int64_t kWorkPerOutput = 20;  // four taps, each a load, a product and a sum, and the weights
  pool.ParallelFor(planes * out_h, MinRowsPerChunk(out_w * kWorkPerOutput), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t plane = k / out_h;
      BilinearRow(in + plane * in_h * in_w, in_w, ys, k - plane * out_h, xs, out + k * out_w);
    }
  });
}

// Nearest pass: row copies of any element size.
// Elements of T gathered along the innermost axis: out[o][j] = in[o][index[j]].
template <typename T>
void GatherInnermost(const ThreadPool& pool, const T* in, T* out, int64_t outer, int64_t in_d, int64_t out_d,
                     const AxisTaps& t) {
  const int64_t* index = t.index.data();
  pool.ParallelFor(outer, MinRowsPerChunk(out_d * static_cast<int64_t>(sizeof(T))), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const T* row = in + o * in_d;
      T* dst = out + o * out_d;
      for (int64_t j = 0; j < out_d; ++j) dst[j] = row[index[j]];
    }
  });
}

void CopyAxis(const ThreadPool& pool, const uint8_t* in, uint8_t* out, int64_t outer, int64_t in_d, int64_t out_d,
              int64_t row_bytes, const AxisTaps& t) {
  // Rows of one element (the innermost axis): a typed gather, not a memcpy per element.
  switch (row_bytes) {
    case 1: return GatherInnermost(pool, in, out, outer, in_d, out_d, t);
    case 2:
      return GatherInnermost(pool, reinterpret_cast<const uint16_t*>(in), reinterpret_cast<uint16_t*>(out), outer,
                             in_d, out_d, t);
    case 4:
      return GatherInnermost(pool, reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(out), outer,
                             in_d, out_d, t);
    case 8:
      return GatherInnermost(pool, reinterpret_cast<const uint64_t*>(in), reinterpret_cast<uint64_t*>(out), outer,
                             in_d, out_d, t);
    default: break;
  }
  pool.ParallelFor(outer * out_d, MinRowsPerChunk(row_bytes), [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t o = k / out_d;
      const int64_t j = k - o * out_d;
      std::memcpy(out + k * row_bytes, in + (o * in_d + t.index[j]) * row_bytes, row_bytes);
    }
  });
}

class ResizeKernel : public Kernel {
 public:
  explicit ResizeKernel(ResizeParams p) : p_(p) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const int64_t rank = x.rank();
    const Tensor* roi_t = NonEmpty(inputs, 1);
    const Tensor* scales_t = NonEmpty(inputs, 2);
    const Tensor* sizes_t = NonEmpty(inputs, 3);
    if ((scales_t == nullptr) == (sizes_t == nullptr)) {
      return absl::InvalidArgumentError("Resize needs exactly one of scales and sizes");
    }
    std::vector<int64_t> out_dims(rank);
    std::vector<double> scales(rank);
    if (scales_t != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(scales, ReadDoubles(*scales_t, "Resize scales"));
      if (static_cast<int64_t>(scales.size()) != rank) {
        return absl::InvalidArgumentError(absl::StrCat("Resize scales has ", scales.size(), " values for rank ", rank));
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (!(scales[d] > 0) || !std::isfinite(scales[d])) {
          return absl::InvalidArgumentError(absl::StrCat("Resize scale ", scales[d], " is not positive"));
        }
        const double size = std::floor(static_cast<float>(scales[d]) * static_cast<float>(x.dims()[d]));
        if (size > 9007199254740992.0) {  // 2^53: beyond it the cast to int64 is not exact (or defined)
          return absl::InvalidArgumentError(absl::StrCat("Resize scale ", scales[d], " on dim ", x.dims()[d],
                                                         " gives an implausible size"));
        }
        out_dims[d] = static_cast<int64_t>(size);
      }
    } else {
      QFUSE_ASSIGN_OR_RETURN(out_dims, ReadInt64s(*sizes_t, "Resize sizes"));
      if (static_cast<int64_t>(out_dims.size()) != rank) {
        return absl::InvalidArgumentError(absl::StrCat("Resize sizes has ", out_dims.size(), " values for rank ", rank));
      }
      for (int64_t d = 0; d < rank; ++d) {
        if (out_dims[d] < 0) return absl::InvalidArgumentError("Resize sizes must be >= 0");
        scales[d] = x.dims()[d] == 0 ? 1.0 : static_cast<double>(out_dims[d]) / static_cast<double>(x.dims()[d]);
      }
    }
    std::vector<double> roi(2 * rank, 0.0);
    for (int64_t d = 0; d < rank; ++d) roi[rank + d] = 1.0;
    if (p_.coordinate_mode == CoordinateMode::kTfCropAndResize) {
      if (roi_t == nullptr) return absl::InvalidArgumentError("tf_crop_and_resize needs a roi input");
      QFUSE_ASSIGN_OR_RETURN(roi, ReadDoubles(*roi_t, "Resize roi"));
      if (static_cast<int64_t>(roi.size()) != 2 * rank) {
        return absl::InvalidArgumentError(absl::StrCat("Resize roi has ", roi.size(), " values for rank ", rank));
      }
    }
    const bool is_float = x.dtype() == DataType::kFloat32;
    if (!is_float && p_.mode != ResizeMode::kNearest) {
      return absl::UnimplementedError(absl::StrCat("Resize linear/cubic on ", ir::DataTypeName(x.dtype())));
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), out_dims));
    if (y.num_elements() == 0) {
      outputs[0] = std::move(y);
      return absl::OkStatus();
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (x.dims()[d] == 0) return absl::InvalidArgumentError("Resize of an empty input to a non-empty output");
    }
    if (is_float && p_.mode == ResizeMode::kLinear && BilinearSupports(p_.coordinate_mode) &&
        (rank == 2 || (rank == 4 && static_cast<float>(scales[0]) == 1.f && static_cast<float>(scales[1]) == 1.f)) &&
        !OutputLengthMatters(p_.coordinate_mode, scales_t != nullptr, scales, x.dims(), out_dims)) {
      if (out_dims == x.dims()) {
        outputs[0] = x;
        return absl::OkStatus();
      }
      float spatial_scales[2];
      for (int k = 0; k < 2; ++k) {
        const int64_t d = rank - 2 + k;
        spatial_scales[k] = scales_t != nullptr ? static_cast<float>(scales[d])
                                                : static_cast<float>(out_dims[d]) / static_cast<float>(x.dims()[d]);
      }
      ResizeBilinear(*ctx.pool, p_, x, spatial_scales, y);
      outputs[0] = std::move(y);
      return absl::OkStatus();
    }
    // One pass per non-identity axis, innermost first.
    Tensor cur = x;
    bool copied = false;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t in_d = cur.dims()[d];
      const AxisTaps taps = ComputeAxisTaps(p_, in_d, out_dims[d], scales[d], roi[d], roi[rank + d]);
      if (taps.identity) continue;
      if (!is_float && taps.any_extrapolate) {
        return absl::UnimplementedError(absl::StrCat("tf_crop_and_resize extrapolation on ",
                                                     ir::DataTypeName(x.dtype())));
      }
      std::vector<int64_t> dims = cur.dims();
      dims[d] = out_dims[d];
      QFUSE_ASSIGN_OR_RETURN(Tensor next, Tensor::Create(x.dtype(), dims));
      const int64_t outer = DimProduct(dims, 0, d);
      const int64_t inner = DimProduct(dims, d + 1, rank);
      if (is_float && !(p_.mode == ResizeMode::kNearest && !taps.any_extrapolate)) {
        InterpolateAxis(*ctx.pool, cur.data<float>(), next.data<float>(), outer, in_d, out_dims[d], inner, taps,
                        p_.extrapolation_value);
      } else {
        CopyAxis(*ctx.pool, static_cast<const uint8_t*>(cur.raw_data()), static_cast<uint8_t*>(next.raw_data()), outer,
                 in_d, out_dims[d], inner * static_cast<int64_t>(ir::ElementSize(x.dtype())), taps);
      }
      cur = std::move(next);
      copied = true;
    }
    outputs[0] = copied ? std::move(cur) : x;
    return absl::OkStatus();
  }

 private:
  ResizeParams p_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateResizeKernel(const ir::Node& node) {
  const ir::AttributeMap& a = node.attrs();
  ResizeParams p;
  QFUSE_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode", "nearest"));
  if (mode == "nearest") {
    p.mode = ResizeMode::kNearest;
  } else if (mode == "linear") {
    p.mode = ResizeMode::kLinear;
  } else if (mode == "cubic") {
    p.mode = ResizeMode::kCubic;
  } else {
    return absl::UnimplementedError(absl::StrCat("Resize mode '", mode, "'"));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string coord, a.GetString("coordinate_transformation_mode", "half_pixel"));
  if (coord == "half_pixel") {
    p.coordinate_mode = CoordinateMode::kHalfPixel;
  } else if (coord == "pytorch_half_pixel") {
    p.coordinate_mode = CoordinateMode::kPytorchHalfPixel;
  } else if (coord == "align_corners") {
    p.coordinate_mode = CoordinateMode::kAlignCorners;
  } else if (coord == "asymmetric") {
    p.coordinate_mode = CoordinateMode::kAsymmetric;
  } else if (coord == "tf_half_pixel_for_nn") {
    p.coordinate_mode = CoordinateMode::kTfHalfPixelForNn;
  } else if (coord == "tf_crop_and_resize") {
    p.coordinate_mode = CoordinateMode::kTfCropAndResize;
  } else {
    return absl::UnimplementedError(absl::StrCat("Resize coordinate_transformation_mode '", coord, "'"));
  }
  QFUSE_ASSIGN_OR_RETURN(std::string nearest, a.GetString("nearest_mode", "round_prefer_floor"));
  if (nearest == "round_prefer_floor") {
    p.nearest_mode = NearestMode::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    p.nearest_mode = NearestMode::kRoundPreferCeil;
  } else if (nearest == "floor") {
    p.nearest_mode = NearestMode::kFloor;
  } else if (nearest == "ceil") {
    p.nearest_mode = NearestMode::kCeil;
  } else {
    return absl::UnimplementedError(absl::StrCat("Resize nearest_mode '", nearest, "'"));
  }
  QFUSE_ASSIGN_OR_RETURN(float cubic_a, a.GetFloat("cubic_coeff_a", -0.75f));
  p.cubic_coeff_a = cubic_a;
  QFUSE_ASSIGN_OR_RETURN(int64_t exclude, a.GetInt("exclude_outside", 0));
  p.exclude_outside = exclude != 0;
  QFUSE_ASSIGN_OR_RETURN(p.extrapolation_value, a.GetFloat("extrapolation_value", 0.f));
  QFUSE_ASSIGN_OR_RETURN(int64_t antialias, a.GetInt("antialias", 0));
  if (antialias != 0) return absl::UnimplementedError("Resize antialias");
  if (a.Has("axes")) return absl::UnimplementedError("Resize axes attribute");
  QFUSE_ASSIGN_OR_RETURN(std::string policy, a.GetString("keep_aspect_ratio_policy", "stretch"));
  if (policy != "stretch") return absl::UnimplementedError(absl::StrCat("Resize keep_aspect_ratio_policy '", policy, "'"));
  return std::unique_ptr<Kernel>(new ResizeKernel(p));
}

}  // namespace qfuse::runtime::kernels
