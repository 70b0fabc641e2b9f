// MaxPool / AveragePool over 1-D to 3-D windows, and GlobalAveragePool / GlobalMaxPool.
//
// Output sizes follow the ONNX spec: with auto_pad NOTSET, out = floor or ceil of
// (in + pad_begin + pad_end - ((k - 1) * dilation + 1)) / stride + 1, and in ceil mode a
// last window that would start past the input and the begin padding is dropped (as
// ONNX Runtime and PyTorch do). SAME_UPPER / SAME_LOWER give out = ceil(in / stride)
// with the extra padding at the end / beginning. AveragePool divides by the taps inside
// the input (count_include_pad = 0) or inside the padded input (= 1); taps that a ceil-mode
// window puts beyond the end padding are never counted. Sums accumulate in float
// (double for DOUBLE inputs); a FLOAT GlobalAveragePool sums and divides as onnxruntime does
// (global_average_row.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn/global_average_row.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/nn_common.h"

namespace qfuse::runtime::kernels {
namespace {

using nn_internal::MinChunk;

// Pool kernels work on [N*C, D0, D1, D2]; lower-rank windows get leading unit dims.
constexpr int kMaxSpatial = 3;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };
enum class PoolType { kMax, kAverage };

struct PoolParams {
  PoolType type = PoolType::kMax;
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // all begins, then all ends (ONNX order)
  bool ceil_mode = false;
  bool count_include_pad = false;
  bool column_major_indices = false;  // storage_order = 1
  bool want_indices = false;
};

// One output position along one spatial dim.
struct Window {
  int64_t start = 0;        // input coordinate of tap 0 (negative inside the begin padding)
  int64_t tap_begin = 0;    // taps [tap_begin, tap_end) land inside [0, in)
  int64_t tap_end = 0;
  int64_t padded_taps = 0;  // taps inside [-pad_begin, in + pad_end)
};

struct DimPlan {
  int64_t in = 1;
  int64_t out = 1;
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  std::vector<Window> windows;  // one per output position
};

// ceil(a / b) for b > 0 and any sign of a.
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Taps t in [0, k) with lo <= start + t * d < hi.
void TapRange(int64_t start, int64_t k, int64_t d, int64_t lo, int64_t hi, int64_t* begin, int64_t* end) {
  *begin = std::clamp<int64_t>(CeilDiv(lo - start, d), 0, k);
  *end = std::clamp<int64_t>(CeilDiv(hi - start, d), 0, k);
  if (*end < *begin) *end = *begin;
}

absl::StatusOr<DimPlan> PlanDim(const PoolParams& p, size_t i, int64_t in) {
  const size_t ns = p.kernel.size();
  const int64_t k = p.kernel[i], s = p.strides[i], d = p.dilations[i];
  const int64_t extent = (k - 1) * d + 1;
  int64_t pad_begin = 0, pad_end = 0, out = 0;
  switch (p.auto_pad) {
    case AutoPad::kNotSet: {
      pad_begin = p.pads[i];
      pad_end = p.pads[i + ns];
      const int64_t span = in + pad_begin + pad_end - extent;
      if (span < 0) {
        return absl::InvalidArgumentError(absl::StrCat("spatial dim ", i, " of size ", in, " plus pads is smaller than the window extent ", extent));
      }
      out = p.ceil_mode ? CeilDiv(span, s) + 1 : span / s + 1;
      if (p.ceil_mode && (out - 1) * s >= in + pad_begin) --out;
      break;
    }
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      out = CeilDiv(in, s);
      const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      pad_begin = p.auto_pad == AutoPad::kSameUpper ? total / 2 : total - total / 2;
      pad_end = total - pad_begin;
      break;
    }
    case AutoPad::kValid:
      if (in < extent) {
        return absl::InvalidArgumentError(absl::StrCat("spatial dim ", i, " of size ", in, " is smaller than the window extent ", extent, " (auto_pad VALID)"));
      }
      out = (in - extent) / s + 1;
      break;
  }
  DimPlan plan;
  plan.in = in;
  plan.out = out;
  plan.kernel = k;
  plan.stride = s;
  plan.dilation = d;
  plan.pad_begin = pad_begin;
  plan.windows.resize(out);
  for (int64_t o = 0; o < out; ++o) {
    Window& w = plan.windows[o];
    w.start = o * s - pad_begin;
    TapRange(w.start, k, d, 0, in, &w.tap_begin, &w.tap_end);
    int64_t pb, pe;
    TapRange(w.start, k, d, -pad_begin, in + pad_end, &pb, &pe);
    w.padded_taps = pe - pb;
  }
  return plan;
}

DimPlan UnitDim() {
  DimPlan plan;
  plan.windows = {Window{0, 0, 1, 1}};
  return plan;
}

// MaxPool with the Indices output: one window at a time, tracking where the maximum is
// (the first one on ties). Indices count from the start of the whole tensor.
template <typename T>
void MaxPoolWithIndices(const DimPlan (&dim)[kMaxSpatial], bool column_major, const T* x, T* y, int64_t* indices,
                        int64_t nc_begin, int64_t nc_end) {
  const int64_t d0 = dim[0].in, d1 = dim[1].in, d2 = dim[2].in;
  const int64_t in_size = d0 * d1 * d2;
  const int64_t out_size = dim[0].out * dim[1].out * dim[2].out;
  const int64_t dil0 = dim[0].dilation, dil1 = dim[1].dilation, dil2 = dim[2].dilation;
  for (int64_t nc = nc_begin; nc < nc_end; ++nc) {
    const T* xc = x + nc * in_size;
    T* yc = y + nc * out_size;
    int64_t* ic = indices + nc * out_size;
    for (const Window& w0 : dim[0].windows) {
      for (const Window& w1 : dim[1].windows) {
        for (const Window& w2 : dim[2].windows) {
          T best = std::numeric_limits<T>::lowest();
          int64_t best_index = -1;
          for (int64_t t0 = w0.tap_begin; t0 < w0.tap_end; ++t0) {
            const int64_t h0 = w0.start + t0 * dil0;
            for (int64_t t1 = w1.tap_begin; t1 < w1.tap_end; ++t1) {
              const int64_t h1 = w1.start + t1 * dil1;
              const int64_t row = (h0 * d1 + h1) * d2;
              for (int64_t t2 = w2.tap_begin; t2 < w2.tap_end; ++t2) {
                const int64_t h2 = w2.start + t2 * dil2;
                const T v = xc[row + h2];
                if (v > best || best_index < 0) {
                  best = v > best ? v : best;
                  best_index = column_major ? h0 + h1 * d0 + h2 * d0 * d1 : row + h2;
                }
              }
            }
          }
          *yc++ = best;
          *ic++ = best_index < 0 ? -1 : nc * in_size + best_index;
        }
      }
    }
  }
}

// Output columns [begin, end) for which tap t of the innermost dim lands inside the input.
struct ColumnRange {
  int64_t begin;
  int64_t end;
  int64_t offset;  // input column = output column * stride + offset
};

std::vector<ColumnRange> ColumnRanges(const DimPlan& dim) {
  std::vector<ColumnRange> ranges(dim.kernel);
  for (int64_t t = 0; t < dim.kernel; ++t) {
    const int64_t offset = t * dim.dilation - dim.pad_begin;
    ranges[t].offset = offset;
    ranges[t].begin = std::clamp<int64_t>(CeilDiv(-offset, dim.stride), 0, dim.out);
    ranges[t].end = std::clamp<int64_t>(CeilDiv(dim.in - offset, dim.stride), ranges[t].begin, dim.out);
  }
  return ranges;
}

// acc[o] = max(acc[o], src[o * stride]) or acc[o] += src[o * stride], for o in [0, n).
template <typename T, typename Acc, bool kMax>
inline void AccumulateColumns(const T* __restrict src, int64_t stride, int64_t n, Acc* __restrict acc) {
  for (int64_t o = 0; o < n; ++o) {
    const Acc v = src[o * stride];
    if (kMax) {
      acc[o] = v > acc[o] ? v : acc[o];
    } else {
      acc[o] += v;
    }
  }
}

// Max or average pooling one output row at a time: every tap of the window adds a
// whole row of output columns into `acc` (independent accumulators, so the loop
// pipelines and, at stride 1, vectorises). Per output element the taps are visited in
// the same order as a window-at-a-time loop.
template <typename T, typename Acc, bool kMax>
void PoolRows(const DimPlan (&dim)[kMaxSpatial], const std::vector<ColumnRange>& columns, bool count_include_pad,
              const T* x, T* y, int64_t nc_begin, int64_t nc_end, Acc* acc) {
  const int64_t d1 = dim[1].in, d2 = dim[2].in;
  const int64_t in_size = dim[0].in * d1 * d2;
  const int64_t out2 = dim[2].out;
  const int64_t out_size = dim[0].out * dim[1].out * out2;
  const int64_t dil0 = dim[0].dilation, dil1 = dim[1].dilation, stride2 = dim[2].stride;
  for (int64_t nc = nc_begin; nc < nc_end; ++nc) {
    const T* xc = x + nc * in_size;
    T* yc = y + nc * out_size;
    for (const Window& w0 : dim[0].windows) {
      for (const Window& w1 : dim[1].windows) {
        std::fill(acc, acc + out2, kMax ? std::numeric_limits<Acc>::lowest() : Acc(0));
        for (int64_t t0 = w0.tap_begin; t0 < w0.tap_end; ++t0) {
          const int64_t h0 = w0.start + t0 * dil0;
          for (int64_t t1 = w1.tap_begin; t1 < w1.tap_end; ++t1) {
            const T* row = xc + (h0 * d1 + w1.start + t1 * dil1) * d2;
            for (const ColumnRange& c : columns) {
              if (stride2 == 1) {  // contiguous: vectorises
                AccumulateColumns<T, Acc, kMax>(row + c.offset + c.begin, 1, c.end - c.begin, acc + c.begin);
              } else {
                AccumulateColumns<T, Acc, kMax>(row + c.offset + c.begin * stride2, stride2, c.end - c.begin,
                                                acc + c.begin);
              }
            }
          }
        }
        if (kMax) {
          for (int64_t o = 0; o < out2; ++o) yc[o] = static_cast<T>(acc[o]);
        } else {
          const int64_t taps01 = count_include_pad ? w0.padded_taps * w1.padded_taps
                                                   : (w0.tap_end - w0.tap_begin) * (w1.tap_end - w1.tap_begin);
          for (int64_t o = 0; o < out2; ++o) {
            const Window& w2 = dim[2].windows[o];
            const int64_t count = taps01 * (count_include_pad ? w2.padded_taps : w2.tap_end - w2.tap_begin);
            yc[o] = count > 0 ? static_cast<T>(acc[o] / static_cast<Acc>(count)) : T(0);
          }
        }
        yc += out2;
      }
    }
  }
}

class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(PoolParams params) : p_(std::move(params)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const int64_t ns = static_cast<int64_t>(p_.kernel.size());
    if (x.rank() != ns + 2) {
      return absl::InvalidArgumentError(absl::StrCat("input X of shape ", ir::DimsToString(x.dims()), " must have rank ",
                                                     ns + 2, " for a ", ns, "-D kernel_shape"));
    }
    DimPlan dim[kMaxSpatial];
    std::vector<int64_t> out_dims = {x.dims()[0], x.dims()[1]};
    for (int64_t i = 0; i < kMaxSpatial; ++i) {
      const int64_t s = i - (kMaxSpatial - ns);  // spatial index, negative for padding dims
      if (s < 0) {
        dim[i] = UnitDim();
        continue;
      }
      QFUSE_ASSIGN_OR_RETURN(dim[i], PlanDim(p_, s, x.dims()[2 + s]));
      out_dims.push_back(dim[i].out);
    }
    const int64_t channels = x.dims()[0] * x.dims()[1];
    int64_t window_size = 1;
    for (int64_t k : p_.kernel) window_size *= k;
    const int64_t min_chunk = MinChunk(ir::NumElements(out_dims) / std::max<int64_t>(1, channels) * window_size);

    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(x.dtype(), out_dims));
    if (p_.type == PoolType::kAverage) {
      switch (x.dtype()) {
        case DataType::kFloat32: return Average<float>(ctx, dim, x, &outputs[0], channels, min_chunk);
        case DataType::kFloat64: return Average<double>(ctx, dim, x, &outputs[0], channels, min_chunk);
        default:
          return absl::UnimplementedError(absl::StrCat("AveragePool of ", ir::DataTypeName(x.dtype()), " input"));
      }
    }
    Tensor* indices = nullptr;
    if (p_.want_indices && outputs.size() > 1) {
      QFUSE_ASSIGN_OR_RETURN(outputs[1], Tensor::Create(DataType::kInt64, out_dims));
      indices = &outputs[1];
    }
    switch (x.dtype()) {
      case DataType::kFloat32: return Max<float>(ctx, dim, x, &outputs[0], indices, channels, min_chunk);
      case DataType::kFloat64: return Max<double>(ctx, dim, x, &outputs[0], indices, channels, min_chunk);
      case DataType::kInt8: return Max<int8_t>(ctx, dim, x, &outputs[0], indices, channels, min_chunk);
      case DataType::kUint8: return Max<uint8_t>(ctx, dim, x, &outputs[0], indices, channels, min_chunk);
      default:
        return absl::UnimplementedError(absl::StrCat("MaxPool of ", ir::DataTypeName(x.dtype()), " input"));
    }
  }

 private:
  template <typename T>
  absl::Status Average(const KernelContext& ctx, const DimPlan (&dim)[kMaxSpatial], const Tensor& x, Tensor* y,
                       int64_t channels, int64_t min_chunk) const {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    return Rows<T, Acc, false>(ctx, dim, x, y, channels, min_chunk);
  }

  template <typename T>
  absl::Status Max(const KernelContext& ctx, const DimPlan (&dim)[kMaxSpatial], const Tensor& x, Tensor* y,
                   Tensor* indices, int64_t channels, int64_t min_chunk) const {
    if (indices == nullptr) return Rows<T, T, true>(ctx, dim, x, y, channels, min_chunk);
    const T* xd = x.data<T>();
    T* yd = y->data<T>();
    int64_t* id = indices->data<int64_t>();
    const bool column_major = p_.column_major_indices;
    ctx.pool->ParallelFor(channels, min_chunk, [&](int64_t begin, int64_t end) {
      MaxPoolWithIndices<T>(dim, column_major, xd, yd, id, begin, end);
    });
    return absl::OkStatus();
  }

  template <typename T, typename Acc, bool kMax>
  absl::Status Rows(const KernelContext& ctx, const DimPlan (&dim)[kMaxSpatial], const Tensor& x, Tensor* y,
                    int64_t channels, int64_t min_chunk) const {
    const T* xd = x.data<T>();
    T* yd = y->data<T>();
    const std::vector<ColumnRange> columns = ColumnRanges(dim[2]);
    const bool include_pad = p_.count_include_pad;
    ctx.pool->ParallelFor(channels, min_chunk, [&](int64_t begin, int64_t end) {
      std::vector<Acc> acc(dim[2].out);
      PoolRows<T, Acc, kMax>(dim, columns, include_pad, xd, yd, begin, end, acc.data());
    });
    return absl::OkStatus();
  }

  PoolParams p_;
};

absl::StatusOr<bool> GetBool(const ir::Node& node, const std::string& name) {
  QFUSE_ASSIGN_OR_RETURN(int64_t v, node.attrs().GetInt(name, 0));
  if (v != 0 && v != 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be 0 or 1, got ", v));
  return v == 1;
}

// Window attributes beyond this are refused, which keeps the window arithmetic inside
// int64 for any input that fits in memory.
constexpr int64_t kMaxWindowAttribute = int64_t{1} << 31;

// `values` must hold `count` positive entries (or be empty: then all `fallback`).
absl::StatusOr<std::vector<int64_t>> PositiveList(const ir::Node& node, const std::string& name, size_t count,
                                                  int64_t fallback) {
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> v, node.attrs().GetInts(name, {}));
  if (v.empty()) v.assign(count, fallback);
  if (v.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(name, " has ", v.size(), " entries, expected ", count));
  }
  for (int64_t e : v) {
    if (e <= 0) return absl::InvalidArgumentError(absl::StrCat(name, " entries must be positive, got ", e));
    if (e > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(absl::StrCat(name, " entry ", e, " is implausibly large (> 2^31)"));
    }
  }
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreatePoolKernel(const ir::Node& node) {
  PoolParams p;
  if (node.op_type() == "MaxPool") {
    p.type = PoolType::kMax;
  } else if (node.op_type() == "AveragePool") {
    p.type = PoolType::kAverage;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("CreatePoolKernel cannot run ", node.op_type()));
  }
  QFUSE_ASSIGN_OR_RETURN(p.kernel, node.attrs().GetInts("kernel_shape", {}));
  const size_t ns = p.kernel.size();
  if (ns == 0) return absl::InvalidArgumentError("kernel_shape is required");
  if (ns > static_cast<size_t>(kMaxSpatial)) {
    return absl::UnimplementedError(absl::StrCat(ns, "-D pooling (at most ", kMaxSpatial, "-D is supported)"));
  }
  QFUSE_ASSIGN_OR_RETURN(p.kernel, PositiveList(node, "kernel_shape", ns, 1));
  QFUSE_ASSIGN_OR_RETURN(p.strides, PositiveList(node, "strides", ns, 1));
  QFUSE_ASSIGN_OR_RETURN(p.dilations, PositiveList(node, "dilations", ns, 1));
  QFUSE_ASSIGN_OR_RETURN(p.pads, node.attrs().GetInts("pads", {}));
  if (p.pads.empty()) p.pads.assign(2 * ns, 0);
  if (p.pads.size() != 2 * ns) {
    return absl::InvalidArgumentError(absl::StrCat("pads has ", p.pads.size(), " entries, expected ", 2 * ns));
  }
  for (int64_t pad : p.pads) {
    if (pad < 0) return absl::InvalidArgumentError(absl::StrCat("pads must be non-negative, got ", pad));
    if (pad > kMaxWindowAttribute) {
      return absl::InvalidArgumentError(absl::StrCat("pads entry ", pad, " is implausibly large (> 2^31)"));
    }
  }
  QFUSE_ASSIGN_OR_RETURN(std::string auto_pad, node.attrs().GetString("auto_pad", "NOTSET"));
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    p.auto_pad = AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    p.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    p.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    p.auto_pad = AutoPad::kValid;
  } else {
    return absl::UnimplementedError(absl::StrCat("auto_pad '", auto_pad, "'"));
  }
  QFUSE_ASSIGN_OR_RETURN(p.ceil_mode, GetBool(node, "ceil_mode"));
  QFUSE_ASSIGN_OR_RETURN(p.count_include_pad, GetBool(node, "count_include_pad"));
  QFUSE_ASSIGN_OR_RETURN(p.column_major_indices, GetBool(node, "storage_order"));
  p.want_indices = p.type == PoolType::kMax && node.output(1) != nullptr;
  return std::unique_ptr<Kernel>(new PoolKernel(std::move(p)));
}

namespace {

template <typename T, bool kMax>
void GlobalPoolChannels(const T* x, T* y, int64_t spatial, int64_t begin, int64_t end) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (int64_t nc = begin; nc < end; ++nc) {
    const T* xc = x + nc * spatial;
    if constexpr (kMax) {
      T best = std::numeric_limits<T>::lowest();
      for (int64_t i = 0; i < spatial; ++i) best = xc[i] > best ? xc[i] : best;
      y[nc] = best;
    } else {
      Acc sum = 0;
      for (int64_t i = 0; i < spatial; ++i) sum += xc[i];
      y[nc] = spatial > 0 ? static_cast<T>(sum / static_cast<Acc>(spatial)) : T(0);
    }
  }
}

class GlobalPoolKernel : public Kernel {
 public:
  GlobalPoolKernel(bool is_max, GlobalAverageOrder order) : is_max_(is_max), order_(order) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    if (x.rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("input X of shape ", ir::DimsToString(x.dims()), " must have rank >= 2"));
    }
    std::vector<int64_t> out_dims(x.dims().size(), 1);
    out_dims[0] = x.dims()[0];
    out_dims[1] = x.dims()[1];
    const int64_t channels = out_dims[0] * out_dims[1];
    const int64_t spatial = channels > 0 ? x.num_elements() / channels : 0;
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(x.dtype(), out_dims));
    switch (x.dtype()) {
      case DataType::kFloat32: return Dispatch<float>(ctx, x, &outputs[0], channels, spatial);
      case DataType::kFloat64: return Dispatch<double>(ctx, x, &outputs[0], channels, spatial);
      case DataType::kInt8:
        if (is_max_) return Dispatch<int8_t>(ctx, x, &outputs[0], channels, spatial);
        break;
      case DataType::kUint8:
        if (is_max_) return Dispatch<uint8_t>(ctx, x, &outputs[0], channels, spatial);
        break;
      default:
        break;
    }
    return absl::UnimplementedError(absl::StrCat(is_max_ ? "GlobalMaxPool" : "GlobalAveragePool", " of ",
                                                 ir::DataTypeName(x.dtype()), " input"));
  }

 private:
  template <typename T>
  absl::Status Dispatch(const KernelContext& ctx, const Tensor& x, Tensor* y, int64_t channels, int64_t spatial) const {
    const T* xd = x.data<T>();
    T* yd = y->data<T>();
    const bool is_max = is_max_;
    const bool vector = IsaAllowed(Isa::kAvx2);
    ctx.pool->ParallelFor(channels, MinChunk(spatial), [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        if (!is_max && spatial > 0) {
          GlobalAverageRows(xd + begin * spatial, end - begin, spatial, order_, yd + begin, vector);
          return;
        }
      }
      if (is_max) {
        GlobalPoolChannels<T, true>(xd, yd, spatial, begin, end);
      } else {
        GlobalPoolChannels<T, false>(xd, yd, spatial, begin, end);
      }
    });
    return absl::OkStatus();
  }

  bool is_max_;
  GlobalAverageOrder order_;  // of FLOAT GlobalAveragePool
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateGlobalPoolKernel(const ir::Node& node) {
  if (node.op_type() == "GlobalMaxPool") {
    return std::unique_ptr<Kernel>(new GlobalPoolKernel(true, GlobalAverageOrder::kFourLanes));
  }
  if (node.op_type() == "GlobalAveragePool") {
    // onnxruntime's optimiser decides from the declared type, which the importer's shape
    // inference filled in as onnxruntime's own does.
    GlobalAverageInput input;
    const ir::Value* x = node.input(0);
    if (x != nullptr && x->type().shape.rank_known) {
      const ir::Shape& shape = x->type().shape;
      input.rank = shape.rank();
      if (input.rank >= 2 && shape.dims[1].is_known()) input.channels = shape.dims[1].value;
      input.graph_input = x->is_graph_input();
    }
    return std::unique_ptr<Kernel>(new GlobalPoolKernel(false, GlobalAverageOrderFor(input, OnnxruntimeNchwcBlock())));
  }
  return absl::InvalidArgumentError(absl::StrCat("CreateGlobalPoolKernel cannot run ", node.op_type()));
}

}  // namespace qfuse::runtime::kernels
