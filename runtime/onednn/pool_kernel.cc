#include "runtime/onednn/pool_kernel.h"

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/engine_tuner.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/quant/nhwc_max_pool.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;

// A window pool over H and W; `global` makes the window the whole input.
struct PoolShape {
  dnnl::algorithm algorithm = dnnl::algorithm::pooling_max;
  bool global = false;
  bool ceil_mode = false;
  int64_t kernel[2] = {1, 1}, strides[2] = {1, 1}, pads[4] = {0, 0, 0, 0};  // pads: begin h, w, end h, w
};

struct Primitive {
  dnnl::pooling_forward pool;
  memory::desc src_desc, dst_desc;
  std::vector<int64_t> dst_dims;
};

// FLOAT pools read and write the channel-blocked layout; INT8 / UINT8 MaxPool (a window max,
// exact in any order) reads and writes the integer units' channels-last layout.
class OneDnnPoolKernel : public Kernel {
 public:
  OneDnnPoolKernel(PoolShape shape, int64_t channels, ir::DataType dtype, std::unique_ptr<Kernel> native,
                   const std::string& name)
      : tuner_(name, {"onednn", "rows"}),
        shape_(shape),
        channels_(channels),
        dtype_(dtype),
        kind_(dtype == ir::DataType::kFloat32 ? LayoutKind::kChannelBlocked : LayoutKind::kChannelsLast),
        native_(std::move(native)),
        block_(BlockSize()) {}

  TensorLayout output_layout(int output) const override {
    return output == 0 ? TensorLayout{kind_, channels_} : TensorLayout{};
  }
  bool accepts_layout(int input, LayoutKind kind) const override {
    return kind == LayoutKind::kPlain || (kind == kind_ && input == 0);
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    if (inputs.empty() || inputs[0] == nullptr) return absl::InvalidArgumentError("the input is missing");
    UseThreadsOf(*ctx.pool);  // before any primitive is made (onednn_engine.h)
    const Tensor& x = *inputs[0];
    std::vector<int64_t> dims;  // [N, C, H, W] when the input is in the kernel's layout
    const Tensor* src_tensor = &x;
    Tensor converted;  // the input in the kernel's layout
    if (InputKind(ctx, 0) == LayoutKind::kPlain && shape_.algorithm == dnnl::algorithm::pooling_max &&
        x.dtype() == dtype_ && x.rank() == 4 && x.dims()[1] == channels_) {
      // A plain input (after a Concat, or a graph input) takes the kernel's layout first: a
      // window's maximum is the same value in any layout, and the hand-written NCHW loops were
      // the slowest part of GoogLeNet, fp32 and int8 (docs/performance.md).
      if (kind_ == LayoutKind::kChannelBlocked) {
        converted = NewBlocked(x.dims(), channels_, block_);
        PlainToBlocked(*ctx.pool, x, block_, converted.raw_data());
      } else {
        QFUSE_ASSIGN_OR_RETURN(converted, Tensor::CreateUninitialized(dtype_, {x.dims()[0], x.dims()[2], x.dims()[3],
                                                                            channels_}));
        ReorderInt8(*ctx.pool, x, /*src_channels_last=*/false, x.dims(), converted.raw_data());
      }
      src_tensor = &converted;
      dims = x.dims();
    } else if (InputKind(ctx, 0) == kind_ && x.dtype() == dtype_) {
      if (kind_ == LayoutKind::kChannelBlocked && x.rank() == 5 && x.dims()[4] == block_ &&
          x.dims()[1] == (channels_ + block_ - 1) / block_) {
        dims = {x.dims()[0], channels_, x.dims()[2], x.dims()[3]};
      } else if (kind_ == LayoutKind::kChannelsLast && x.rank() == 4 && x.dims()[3] == channels_) {
        dims = {x.dims()[0], channels_, x.dims()[1], x.dims()[2]};
      }
    }
    absl::StatusOr<const Primitive*> prim = dims.empty() ? absl::UnimplementedError("plain input") : Find(dims);
    if (!prim.ok()) return RunNativeInLayout(*native_, ctx, inputs, kind_, block_, outputs);
    const std::vector<int64_t>& d = (*prim)->dst_dims;
    Tensor out;
    if (kind_ == LayoutKind::kChannelBlocked) {
      out = NewBlocked(d, channels_, block_);
    } else {
      QFUSE_ASSIGN_OR_RETURN(out, Tensor::CreateUninitialized(dtype_, {d[0], d[2], d[3], d[1]}));
    }
    const auto run_onednn = [&]() -> absl::Status {
      memory src((*prim)->src_desc, Engine(), const_cast<void*>(src_tensor->raw_data()));
      memory dst((*prim)->dst_desc, Engine(), out.raw_data());
      try {
        (*prim)->pool.execute(Stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        Stream().wait();
      } catch (const dnnl::error& e) {
        return absl::InternalError(absl::StrCat("oneDNN pooling failed: ", e.what()));
      }
      return absl::OkStatus();
    };
    // An integer MaxPool also has qfuse's channels-last rows (the same bytes): the faster of
    // the two at this shape runs (runtime/engine_tuner.h).
    const std::optional<kernels::quant::NhwcMaxPoolShape> rows = RowsShape(dims, d);
    if (!rows.has_value()) {
      QFUSE_RETURN_IF_ERROR(run_onednn());
    } else {
      const int engine = tuner_.Next(dims);
      const auto* x_bytes = static_cast<const uint8_t*>(src_tensor->raw_data());
      auto* y_bytes = static_cast<uint8_t*>(out.raw_data());
      QFUSE_RETURN_IF_ERROR(tuner_.Timed(dims, engine, [&] {
        return engine == kRowsEngine
                   ? kernels::quant::NhwcMaxPool(*rows, dtype_ == ir::DataType::kInt8, x_bytes, y_bytes, ctx.pool)
                   : run_onednn();
      }));
    }
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

 private:
  static constexpr int kRowsEngine = 1;  // EngineTuner index; oneDNN is 0

  // The rows' shape for an integer MaxPool of plain dims `dims` with output dims `out`, or
  // nullopt where they do not apply (float, average or global pools, windows outside the image).
  std::optional<kernels::quant::NhwcMaxPoolShape> RowsShape(const std::vector<int64_t>& dims,
                                                            const std::vector<int64_t>& out) const {
    if (kind_ != LayoutKind::kChannelsLast || shape_.algorithm != dnnl::algorithm::pooling_max || shape_.global) {
      return std::nullopt;
    }
    kernels::quant::NhwcMaxPoolShape s;
    s.n = dims[0], s.c = dims[1], s.h = dims[2], s.w = dims[3];
    s.kh = shape_.kernel[0], s.kw = shape_.kernel[1], s.sh = shape_.strides[0], s.sw = shape_.strides[1];
    s.pad_top = shape_.pads[0], s.pad_left = shape_.pads[1];
    s.oh = out[2], s.ow = out[3];
    if (!kernels::quant::EveryWindowTouchesTheImage(s)) return std::nullopt;
    return s;
  }

  absl::StatusOr<const Primitive*> Find(const std::vector<int64_t>& dims) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(dims);
    if (it != cache_.end()) return it->second.get();
    QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Primitive> made, Make(dims));
    return cache_.emplace(dims, std::move(made)).first->second.get();
  }

  absl::StatusOr<std::unique_ptr<Primitive>> Make(const std::vector<int64_t>& dims) const {
    auto p = std::make_unique<Primitive>();
    memory::dims kernel, strides, pad_l, pad_r, out;
    for (int d = 0; d < 2; ++d) {
      const int64_t in = dims[2 + d];
      const int64_t k = shape_.global ? in : shape_.kernel[d];
      const int64_t s = shape_.global ? 1 : shape_.strides[d];
      const int64_t pb = shape_.global ? 0 : shape_.pads[d], pe = shape_.global ? 0 : shape_.pads[2 + d];
      const int64_t span = in + pb + pe - k;
      if (span < 0) return absl::InvalidArgumentError("the pooling window is larger than the padded input");
      int64_t o = shape_.ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
      if (shape_.ceil_mode && (o - 1) * s >= in + pb) --o;  // ONNX: the last window starts inside
      kernel.push_back(k);
      strides.push_back(s);
      pad_l.push_back(pb);
      pad_r.push_back((o - 1) * s + k - in - pb);
      out.push_back(o);
    }
    p->dst_dims = {dims[0], dims[1], out[0], out[1]};
    const memory::data_type type = dtype_ == ir::DataType::kFloat32 ? memory::data_type::f32
                                   : dtype_ == ir::DataType::kUint8 ? memory::data_type::u8
                                                                    : memory::data_type::s8;
    const memory::format_tag tag = kind_ == LayoutKind::kChannelBlocked ? BlockedTag(block_) : memory::format_tag::nhwc;
    try {
      p->src_desc = memory::desc(memory::dims(dims.begin(), dims.end()), type, tag);
      p->dst_desc = memory::desc(memory::dims(p->dst_dims.begin(), p->dst_dims.end()), type, tag);
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_inference, shape_.algorithm, p->src_desc, p->dst_desc,
                                       strides, kernel, pad_l, pad_r);
      p->pool = dnnl::pooling_forward(dnnl::pooling_forward::primitive_desc(desc, Engine()));
    } catch (const dnnl::error& e) {
      return absl::UnimplementedError(absl::StrCat("oneDNN refuses this pooling: ", e.what()));
    }
    return p;
  }

  EngineTuner tuner_;  // integer MaxPool: oneDNN against the rows, per input shape
  const PoolShape shape_;
  const int64_t channels_;
  const ir::DataType dtype_;
  const LayoutKind kind_;
  const std::unique_ptr<Kernel> native_;
  const int64_t block_;
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<Primitive>> cache_;
};

// The input's channel count when it is a 4-D value of `dtype` with a known one, else 0.
int64_t KnownChannels(const ir::Node& node, ir::DataType dtype) {
  const ir::Value* x = node.inputs().empty() ? nullptr : node.input(0);
  if (x == nullptr || node.outputs().size() != 1) return 0;
  const ir::TensorType& t = x->type();
  if (t.dtype != dtype || !t.shape.rank_known || t.shape.rank() != 4) return 0;
  return t.shape.dims[1].is_known() ? t.shape.dims[1].value : 0;
}

// Reads the window attributes oneDNN can run; nullopt-like false when it cannot.
absl::StatusOr<bool> ReadWindow(const ir::Node& node, PoolShape* shape) {
  const ir::AttributeMap& a = node.attrs();
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, a.GetInts("kernel_shape", {}));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> strides, a.GetInts("strides", {}));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> pads, a.GetInts("pads", {}));
  QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, a.GetInts("dilations", {}));
  QFUSE_ASSIGN_OR_RETURN(std::string auto_pad, a.GetString("auto_pad", "NOTSET"));
  QFUSE_ASSIGN_OR_RETURN(int64_t ceil_mode, a.GetInt("ceil_mode", 0));
  QFUSE_ASSIGN_OR_RETURN(int64_t count_include_pad, a.GetInt("count_include_pad", 0));
  if (kernel.size() != 2 || (!strides.empty() && strides.size() != 2) || (!pads.empty() && pads.size() != 4)) {
    return false;
  }
  for (int64_t d : dilations) {
    if (d != 1) return false;
  }
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && !auto_pad.empty()) return false;
  const bool average = node.op_type() == "AveragePool";
  if (average && ceil_mode != 0) return false;
  shape->algorithm = !average               ? dnnl::algorithm::pooling_max
                     : count_include_pad != 0 ? dnnl::algorithm::pooling_avg_include_padding
                                              : dnnl::algorithm::pooling_avg_exclude_padding;
  shape->ceil_mode = ceil_mode != 0;
  for (int d = 0; d < 2; ++d) {
    shape->kernel[d] = kernel[d];
    shape->strides[d] = strides.empty() ? 1 : strides[d];
  }
  for (int i = 0; i < 4; ++i) shape->pads[i] = pads.empty() || auto_pad == "VALID" ? 0 : pads[i];
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateOneDnnPoolKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> native, kernels::CreatePoolKernel(node));
  if (!UseOneDnn()) return native;
  // FLOAT pools, and the integer graph's MaxPool.
  const ir::DataType dtype = node.inputs().empty() || node.input(0) == nullptr ? ir::DataType::kUndefined
                                                                               : node.input(0)->type().dtype;
  const bool int8 = dtype == ir::DataType::kUint8 || dtype == ir::DataType::kInt8;
  if (dtype != ir::DataType::kFloat32 && !(int8 && node.op_type() == "MaxPool")) return native;
  const int64_t channels = KnownChannels(node, dtype);
  if (channels == 0) return native;
  PoolShape shape;
  QFUSE_ASSIGN_OR_RETURN(bool fits, ReadWindow(node, &shape));
  if (!fits) return native;
  return std::unique_ptr<Kernel>(new OneDnnPoolKernel(shape, channels, dtype, std::move(native), node.name()));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateOneDnnGlobalPoolKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> native, kernels::CreateGlobalPoolKernel(node));
  const int64_t channels = KnownChannels(node, ir::DataType::kFloat32);
  if (!UseOneDnn() || channels == 0) return native;
  PoolShape shape;
  shape.global = true;
  shape.algorithm =
      node.op_type() == "GlobalMaxPool" ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  return std::unique_ptr<Kernel>(new OneDnnPoolKernel(shape, channels, ir::DataType::kFloat32, std::move(native), node.name()));
}

}  // namespace qfuse::runtime::onednn
