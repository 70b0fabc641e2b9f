#include "runtime/onednn/conv_kernel.h"

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/kernels/fused/quant_unit.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/onednn/conv_desc.h"
#include "runtime/onednn/matmul_kernel.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/onednn/unit_post_ops.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;
using kernels::linalg::ConvAttrs;

// Whether a unit has a residual, and its layout.
enum class ResidualKind { kNone, kBlocked, kPlain };

// The channels-last form of a convolution: oneDNN's brgconv kernels on nhwc copies of the
// source and destination, for the layers where the blocked layout's direct kernels are slow.
// Those are spatial convolutions of one image with many weights and few output pixels
// (ResNet's last stages at batch 1, where every weight is read for 49 or 16 pixels):
// reordering both ways and running brgconv took 0.69-0.91 of the blocked kernel's time there
// on AVX-512. It took 1.06-1.34 of it on 1x1 convolutions, small weights or large images, and
// 1.5-1.9 at batches of 2 and 8 images of 4x4, where brgconv's time grew with the images
// (0.38-0.42 -> 0.76-0.78 -> 2.55-2.57 ms) and the blocked kernel's less (0.44-0.49 -> 0.46-0.51 -> 1.37)
// (tests/runtime/onednn:conv_layout_benchmark). So an
// image's float result at batch 1 may differ from its result in a larger batch by float
// rounding (another summation order); each is deterministic.
constexpr int64_t kChannelsLastMinWeights = 256 * 1024;  // O * C/group * kh * kw
constexpr int64_t kChannelsLastMaxPixels = 14 * 14;      // OH * OW

bool PreferChannelsLast(const ConvDims& d, int64_t group) {
  if (group != 1 || d.weights.size() != 4 || d.output.size() != 4 || d.output[0] != 1) return false;
  const int64_t kernel = d.weights[2] * d.weights[3];
  return kernel > 1 && d.weights[0] * d.weights[1] * kernel >= kChannelsLastMinWeights &&
         d.output[2] * d.output[3] <= kChannelsLastMaxPixels;
}

// Whether oneDNN runs `conv` on its reference (scalar loop) implementation.
bool IsReferenceImplementation(const dnnl::convolution_forward& conv) {
  const char* impl = nullptr;
  try {
    if (dnnl_primitive_desc_query(conv.get_primitive_desc(), dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        impl == nullptr) {
      return false;
    }
  } catch (const dnnl::error&) {
    return false;
  }
  return std::string(impl).rfind("ref", 0) == 0;
}

std::atomic<int64_t>& ReferenceAvoidedCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

std::atomic<int64_t>& ChannelsLastCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

// One convolution primitive for one input shape and input layout, with its weights
// already in the primitive's preferred format.
struct Primitive {
  dnnl::convolution_forward conv;
  memory weights;
  memory::desc src_desc, dst_desc;
  std::vector<int64_t> dst_dims;  // plain [N, OC, OH, OW]
  // A blocked residual is read by a binary add post-op (src1, the destination's layout)
  // instead of being copied into the destination for a sum post-op.
  bool binary_residual = false;
  // The channels-last form: src_desc and dst_desc are nhwc; the input (x_desc: blocked or
  // plain), the residual (residual_desc, summed by a sum post-op) and the output (out_desc,
  // blocked) are reordered around the convolution.
  bool channels_last = false;
  memory::desc x_desc, residual_desc, out_desc;
  // brgconv keeps per-execution state in its scratchpad, so each run passes the calling
  // thread's own (user-managed mode): concurrent runs of one executor share the primitive.
  memory::desc scratchpad_desc;
  dnnl::reorder x_reorder, residual_reorder, out_reorder;
  // oneDNN has only its reference kernel for this shape in both layouts (the blocked form's
  // `ref` for large dilations: DeepLabV3's ASPP, 3x3 convolutions dilated 12 to 36 on 8x8 maps,
  // took 3 s each at batch 8): qfuse's own kernel runs it.
  bool native = false;
};

class OneDnnConvKernel : public Kernel {
 public:
  OneDnnConvKernel(ConvAttrs attrs, ir::UnitSpec spec, ir::Tensor weights, ir::Tensor bias,
                   std::unique_ptr<Kernel> native)
      : attrs_(std::move(attrs)),
        spec_(std::move(spec)),
        weights_(std::move(weights)),
        bias_(std::move(bias)),
        native_(std::move(native)),
        block_(BlockSize()),
        out_channels_(weights_.dims()[0]),
        in_channels_(weights_.dims()[1] * attrs_.group) {}

  TensorLayout output_layout(int output) const override {
    return output == 0 ? TensorLayout{LayoutKind::kChannelBlocked, out_channels_} : TensorLayout{};
  }
  bool accepts_layout(int input, LayoutKind kind) const override {
    return kind == LayoutKind::kPlain ||
           (kind == LayoutKind::kChannelBlocked && (input == ir::kUnitX || input == ir::kUnitResidual));
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    const Tensor& x = *inputs[ir::kUnitX];
    const Tensor* residual = inputs.size() > ir::kUnitResidual ? inputs[ir::kUnitResidual] : nullptr;
    const bool x_blocked = InputKind(ctx, ir::kUnitX) == LayoutKind::kChannelBlocked;
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> x_dims, PlainDims(x, x_blocked, in_channels_, "input"));
    UseThreadsOf(*ctx.pool);
    const bool src_plain = SourcePlain(x_blocked);
    // A blocked residual is read in place by a binary add; a plain one is reordered into the
    // destination for a sum (no second copy).
    const ResidualKind residual_kind = residual == nullptr ? ResidualKind::kNone
                                       : InputKind(ctx, ir::kUnitResidual) == LayoutKind::kChannelBlocked
                                           ? ResidualKind::kBlocked
                                           : ResidualKind::kPlain;
    absl::StatusOr<const Primitive*> prim = Find(x_dims, x_blocked, residual_kind);
    if (!prim.ok() || (*prim)->native) {
      return RunNativeInLayout(*native_, ctx, inputs, LayoutKind::kChannelBlocked, block_, outputs);
    }
    const Primitive& p = **prim;
    if (p.channels_last) {
      return RunChannelsLast(p, x, residual, residual_kind == ResidualKind::kBlocked, outputs);
    }
    Tensor out = NewBlocked(p.dst_dims, out_channels_, block_);
    const void* residual_data = nullptr;  // src1 of the binary add
    if (residual != nullptr) {
      const bool r_blocked = residual_kind == ResidualKind::kBlocked;
      QFUSE_RETURN_IF_ERROR(CheckResidual(*residual, r_blocked, p));
      if (p.binary_residual) {
        residual_data = residual->raw_data();
      } else if (r_blocked) {
        std::memcpy(out.raw_data(), residual->raw_data(), out.byte_size());
      } else {
        PlainToBlocked(*ctx.pool, *residual, block_, out.raw_data());
      }
    }
    Tensor reordered;
    const void* src_data = x.raw_data();
    if (!x_blocked && !src_plain) {
      reordered = NewBlocked(x_dims, in_channels_, block_);
      PlainToBlocked(*ctx.pool, x, block_, reordered.raw_data());
      src_data = reordered.raw_data();
    }
    memory src(p.src_desc, Engine(), const_cast<void*>(src_data));
    memory dst(p.dst_desc, Engine(), out.raw_data());
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}};
    if (bias_.dtype() != ir::DataType::kUndefined) {
      args.emplace(DNNL_ARG_BIAS, memory({{out_channels_}, memory::data_type::f32, memory::format_tag::x}, Engine(),
                                         const_cast<void*>(bias_.raw_data())));
    }
    if (residual_data != nullptr) {
      args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                   memory(p.dst_desc, Engine(), const_cast<void*>(residual_data)));
    }
    try {
      p.conv.execute(Stream(), args);
      Stream().wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution failed: ", e.what()));
    }
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

 private:
  // InvalidArgument unless the residual (blocked or plain) has the output's dims.
  absl::Status CheckResidual(const Tensor& residual, bool blocked, const Primitive& p) const {
    QFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> r_dims, PlainDims(residual, blocked, out_channels_, "residual"));
    if (r_dims != p.dst_dims) {
      return absl::InvalidArgumentError(absl::StrCat("residual shape ", ir::DimsToString(r_dims),
                                                     " differs from the output's ", ir::DimsToString(p.dst_dims)));
    }
    return absl::OkStatus();
  }

  // The channels-last form (Primitive::channels_last): x and the residual reordered into nhwc
  // buffers (the residual into the destination, for the sum post-op), the convolution, and
  // the destination reordered into the blocked output.
  absl::Status RunChannelsLast(const Primitive& p, const Tensor& x, const Tensor* residual, bool residual_blocked,
                               absl::Span<Tensor> outputs) const {
    const std::vector<int64_t>& o = p.dst_dims;
    const std::vector<int64_t>& xd = p.src_desc.dims();
    QFUSE_ASSIGN_OR_RETURN(Tensor src,
                           Tensor::CreateUninitialized(ir::DataType::kFloat32, {xd[0], xd[2], xd[3], xd[1]}));
    QFUSE_ASSIGN_OR_RETURN(Tensor dst, Tensor::CreateUninitialized(ir::DataType::kFloat32, {o[0], o[2], o[3], o[1]}));
    if (residual != nullptr) QFUSE_RETURN_IF_ERROR(CheckResidual(*residual, residual_blocked, p));
    Tensor out = NewBlocked(o, out_channels_, block_);
    try {
      memory src_mem(p.src_desc, Engine(), src.raw_data());
      memory dst_mem(p.dst_desc, Engine(), dst.raw_data());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst_mem}};
      if (bias_.dtype() != ir::DataType::kUndefined) {
        args.emplace(DNNL_ARG_BIAS, memory({{out_channels_}, memory::data_type::f32, memory::format_tag::x},
                                           Engine(), const_cast<void*>(bias_.raw_data())));
      }
      AddThreadScratchpad(p.scratchpad_desc, &args);
      dnnl::stream& stream = Stream();
      memory x_mem(p.x_desc, Engine(), const_cast<void*>(x.raw_data()));
      p.x_reorder.execute(stream, x_mem, src_mem);
      if (residual != nullptr) {
        memory residual_mem(p.residual_desc, Engine(), const_cast<void*>(residual->raw_data()));
        p.residual_reorder.execute(stream, residual_mem, dst_mem);
      }
      p.conv.execute(stream, args);
      memory out_mem(p.out_desc, Engine(), out.raw_data());
      p.out_reorder.execute(stream, dst_mem, out_mem);
      stream.wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution failed: ", e.what()));
    }
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

  // [N, C, H, W] of a plain 4-D tensor or of a blocked one holding `channels` channels.
  absl::StatusOr<std::vector<int64_t>> PlainDims(const Tensor& t, bool blocked, int64_t channels,
                                                 const char* what) const {
    if (t.dtype() != ir::DataType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has type ", ir::DataTypeName(t.dtype()), ", not FLOAT"));
    }
    if (blocked && t.rank() == 5 && t.dims()[4] == block_ && t.dims()[1] == (channels + block_ - 1) / block_) {
      return std::vector<int64_t>{t.dims()[0], channels, t.dims()[2], t.dims()[3]};
    }
    if (!blocked && t.rank() == 4 && t.dims()[1] == channels) return t.dims();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", ir::DimsToString(t.dims()), " does not have ", channels, " channels in 2-D layout"));
  }

  // Whether the convolution reads the input in the plain layout: a plain input with few
  // channels (a network's first layer) is read as is; any other plain input is reordered to
  // the blocked layout first.
  bool SourcePlain(bool x_blocked) const { return !x_blocked && in_channels_ < block_; }

  // The primitive for this input shape, created on first use; an error when oneDNN
  // refuses the shape (the caller then runs the hand-written kernel).
  absl::StatusOr<const Primitive*> Find(const std::vector<int64_t>& x_dims, bool x_blocked, ResidualKind residual) {
    const bool src_plain = SourcePlain(x_blocked);
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_tuple(x_dims, x_blocked, residual);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
    QFUSE_ASSIGN_OR_RETURN(ConvDims d, ResolveConvDims(attrs_, x_dims, weights_.dims()));
    std::unique_ptr<Primitive> made;
    const bool channels_last_first = PreferChannelsLast(d, attrs_.group);
    if (channels_last_first) made = MakeChannelsLast(d, x_dims, x_blocked, residual);
    if (made == nullptr) {
      absl::StatusOr<std::unique_ptr<Primitive>> blocked = Make(d, x_dims, src_plain, residual);
      if (!blocked.ok()) {
        // oneDNN refuses the shape: the hand-written kernel, decided once for this key.
        if (!absl::IsUnimplemented(blocked.status())) return blocked.status();
        blocked = std::make_unique<Primitive>();
        (*blocked)->native = true;
      }
      made = *std::move(blocked);
      if (!made->native && IsReferenceImplementation(made->conv)) {
        // Channels-last on any kernel but the reference (brgconv on AVX-512, oneDNN's GEMM
        // convolution below it: DeepLabV3's atrous convolutions at batch 8 under the AVX2 cap took
        // 149 ms on the hand-written kernel, 56 ms on that GEMM), else the hand-written kernel.
        std::unique_ptr<Primitive> other = MakeChannelsLast(d, x_dims, x_blocked, residual, /*any_jit=*/true);
        if (other == nullptr) {
          other = std::make_unique<Primitive>();
          other->native = true;
        }
        made = std::move(other);
        ReferenceAvoidedCount().fetch_add(1);
      }
    }
    return cache_.emplace(key, std::move(made)).first->second.get();
  }

  // The channels-last form for input dims x_dims, or nullptr where oneDNN does not take it
  // with a brgconv kernel (below AVX-512, for one) or refuses a reorder.
  std::unique_ptr<Primitive> MakeChannelsLast(const ConvDims& d, const std::vector<int64_t>& x_dims, bool x_blocked,
                                              ResidualKind residual_kind, bool any_jit = false) const {
    auto p = std::make_unique<Primitive>();
    p->dst_dims = d.output;
    p->channels_last = true;
    const memory::dims x_md(x_dims.begin(), x_dims.end()), o_md(d.output.begin(), d.output.end());
    try {
      p->src_desc = memory::desc(x_md, memory::data_type::f32, memory::format_tag::nhwc);
      p->dst_desc = memory::desc(o_md, memory::data_type::f32, memory::format_tag::nhwc);
      const memory::desc b_desc = bias_.dtype() == ir::DataType::kUndefined
                                      ? memory::desc()
                                      : memory::desc({out_channels_}, memory::data_type::f32, memory::format_tag::x);
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           p->src_desc,
                                           memory::desc(d.weights, memory::data_type::f32, memory::format_tag::any),
                                           b_desc, p->dst_desc, d.strides, d.dilations, d.pad_l, d.pad_r);
      dnnl::post_ops ops;
      if (residual_kind != ResidualKind::kNone) ops.append_sum(1.f);
      AppendUnitActivation(spec_, &ops);
      dnnl::primitive_attr attr;
      attr.set_post_ops(ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::convolution_forward::primitive_desc pd(desc, attr, Engine());
      const std::string impl = pd.impl_info_str();
      if (any_jit ? impl.rfind("ref", 0) == 0 : impl.rfind("brgconv", 0) != 0) return nullptr;
      p->conv = dnnl::convolution_forward(pd);
      p->scratchpad_desc = pd.scratchpad_desc();
      p->weights = ReorderWeights(weights_, d, memory::data_type::f32, pd.weights_desc());
      p->x_desc = memory::desc(x_md, memory::data_type::f32, x_blocked ? BlockedTag(block_) : memory::format_tag::nchw);
      p->x_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), p->x_desc, Engine(), p->src_desc));
      if (residual_kind != ResidualKind::kNone) {
        p->residual_desc =
            memory::desc(o_md, memory::data_type::f32,
                         residual_kind == ResidualKind::kBlocked ? BlockedTag(block_) : memory::format_tag::nchw);
        p->residual_reorder =
            dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), p->residual_desc, Engine(), p->dst_desc));
      }
      p->out_desc = memory::desc(o_md, memory::data_type::f32, BlockedTag(block_));
      p->out_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), p->dst_desc, Engine(), p->out_desc));
    } catch (const dnnl::error&) {
      return nullptr;
    }
    ChannelsLastCount().fetch_add(1);
    return p;
  }

  absl::StatusOr<std::unique_ptr<Primitive>> Make(const ConvDims& d, const std::vector<int64_t>& x_dims, bool src_plain,
                                                  ResidualKind residual_kind) {
    const bool residual = residual_kind != ResidualKind::kNone;
    auto p = std::make_unique<Primitive>();
    p->dst_dims = d.output;
    try {
      p->src_desc = memory::desc(memory::dims(x_dims.begin(), x_dims.end()), memory::data_type::f32,
                                 src_plain ? memory::format_tag::nchw : BlockedTag(block_));
      p->dst_desc =
          memory::desc(memory::dims(d.output.begin(), d.output.end()), memory::data_type::f32, BlockedTag(block_));
      const memory::desc w_any(d.weights, memory::data_type::f32, memory::format_tag::any);
      const memory::desc b_desc = bias_.dtype() == ir::DataType::kUndefined
                                      ? memory::desc()
                                      : memory::desc({out_channels_}, memory::data_type::f32, memory::format_tag::x);
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                           p->src_desc, w_any, b_desc, p->dst_desc, d.strides, d.dilations, d.pad_l,
                                           d.pad_r);
      // A blocked residual as a binary add where oneDNN has a kernel for it, else as a sum.
      const auto make = [&](bool binary) {
        dnnl::post_ops ops;
        if (residual && binary) ops.append_binary(dnnl::algorithm::binary_add, p->dst_desc);
        if (residual && !binary) ops.append_sum(1.f);
        AppendUnitActivation(spec_, &ops);
        dnnl::primitive_attr attr;
        attr.set_post_ops(ops);
        return dnnl::convolution_forward::primitive_desc(desc, attr, Engine());
      };
      // The binary form unless oneDNN refuses it or only its reference / GEMM fallbacks take it
      // where a JIT kernel takes the sum.
      if (residual_kind == ResidualKind::kBlocked) {
        try {
          const dnnl::convolution_forward::primitive_desc pd = make(true);
          if (!IsFallbackImplementation(pd.impl_info_str()) || IsFallbackImplementation(make(false).impl_info_str())) {
            p->conv = dnnl::convolution_forward(pd);
            p->weights = ReorderWeights(weights_, d, memory::data_type::f32, pd.weights_desc());
            p->binary_residual = true;
          }
        } catch (const dnnl::error&) {
        }
      }
      if (!p->binary_residual) {
        const dnnl::convolution_forward::primitive_desc pd = make(false);
        p->conv = dnnl::convolution_forward(pd);
        p->weights = ReorderWeights(weights_, d, memory::data_type::f32, pd.weights_desc());
      }
    } catch (const dnnl::error& e) {
      return absl::UnimplementedError(absl::StrCat("oneDNN refuses this convolution: ", e.what()));
    }
    return p;
  }

  const ConvAttrs attrs_;
  const ir::UnitSpec spec_;
  const ir::Tensor weights_;
  const ir::Tensor bias_;  // dtype kUndefined when absent
  const std::unique_ptr<Kernel> native_;
  const int64_t block_;
  const int64_t out_channels_;
  const int64_t in_channels_;
  std::mutex mu_;
  // Keyed by input dims, whether the input is blocked, and the residual's kind.
  std::map<std::tuple<std::vector<int64_t>, bool, ResidualKind>, std::unique_ptr<Primitive>> cache_;
};

// The oneDNN kernel for `node` (Conv inputs X, W, B; a unit adds the residual), or
// nullptr when the node does not fit it.
absl::StatusOr<std::unique_ptr<Kernel>> MaybeOneDnn(const ir::Node& node, const ir::UnitSpec& spec,
                                                    std::unique_ptr<Kernel> native) {
  const ir::Value* w = node.input(ir::kUnitW);
  const ir::Value* b = node.inputs().size() > ir::kUnitBias ? node.input(ir::kUnitBias) : nullptr;
  const bool fits = UseOneDnn() && w != nullptr && w->is_constant() && w->initializer()->rank() == 4 &&
                    w->initializer()->dtype() == ir::DataType::kFloat32 &&
                    (b == nullptr || (b->is_constant() && b->initializer()->dtype() == ir::DataType::kFloat32)) &&
                    (node.output(0)->type().dtype == ir::DataType::kFloat32 ||
                     node.output(0)->type().dtype == ir::DataType::kUndefined);
  if (!fits) return native;
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, kernels::linalg::ParseConvAttrs(node, /*transpose=*/false));
  const ir::Tensor& weights = *w->initializer();
  if (weights.dims()[0] % attrs.group != 0) return native;  // the hand-written kernel reports it
  if (b != nullptr && b->initializer()->num_elements() != weights.dims()[0]) return native;
  return std::unique_ptr<Kernel>(new OneDnnConvKernel(
      std::move(attrs), spec, weights, b == nullptr ? ir::Tensor() : *b->initializer(), std::move(native)));
}

}  // namespace

int64_t ChannelsLastConvPrimitives() { return ChannelsLastCount().load(); }

int64_t ReferenceConvolutionsAvoided() { return ReferenceAvoidedCount().load(); }

absl::StatusOr<std::unique_ptr<Kernel>> CreateFloatConvKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> native, kernels::CreateConvKernel(node));
  return MaybeOneDnn(node, ir::UnitSpec{ir::UnitBaseOp::kConv}, std::move(native));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateFloatUnitKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> native, kernels::CreateQuantUnitKernel(node));
  QFUSE_ASSIGN_OR_RETURN(ir::UnitSpec spec, ir::ReadUnitSpec(node));
  if (spec.base_op != ir::UnitBaseOp::kConv) return MaybeOneDnnMatMulUnit(node, spec, std::move(native));
  return MaybeOneDnn(node, spec, std::move(native));
}

}  // namespace qfuse::runtime::onednn
