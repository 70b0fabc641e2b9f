#include "runtime/onednn/qlinear_conv_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/strings/str_cat.h"
#include "base/grow_buffer.h"
#include "base/status_macros.h"
#include "ir/fused_unit.h"
#include "runtime/cpu_isa.h"
#include "runtime/engine_tuner.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/int8/unit_requantization.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/quant/nhwc_conv.h"
#include "runtime/onednn/channel_chunks.h"
#include "runtime/onednn/conv_desc.h"
#include "runtime/onednn/float_exact_conv.h"
#include "runtime/onednn/fused_output_stage.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/onednn/source_split.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;
using kernels::linalg::ConvAttrs;

// Pixels per parallel task of the output stage.
constexpr int64_t kPixelsPerTask = 64;
// Images per oneDNN call: as many as keep their int32 accumulators within this size (at
// least one). The output stage reads them right after, and the buffers are reused.
constexpr int64_t kSlabAccBytes = int64_t{4} << 20;
// Pointwise units run in bands of pixels whose int32 accumulators fit this size
// (SetPointwiseBandBytes), one band per OpenMP task from the split to the output stage.
constexpr int64_t kBandAccKiB = 256;
// Fewest pixels per band.
constexpr int64_t kMinBandPixels = 16;

// QFUSE_SPLIT_STATS=1: every split-source call prints its unit and the share of source values
// outside the window (stderr; for docs/performance.md).
bool SplitStats() {
  static const bool on = std::getenv("QFUSE_SPLIT_STATS") != nullptr;
  return on;
}

std::atomic<int64_t>& BandAccBytes() {
  static std::atomic<int64_t> bytes = [] {
    const char* v = std::getenv("QFUSE_POINTWISE_BAND_KB");
    return (v == nullptr ? kBandAccKiB : std::max<int64_t>(0, std::atoll(v))) * 1024;
  }();
  return bytes;
}

// dst_desc: the int32 accumulators, or the output bytes when `fused` (the output stage runs
// inside oneDNN, fused_output_stage.h).
struct Primitive : NhwcConv {
  bool fused = false;
  std::vector<ChannelChunk> chunks;  // where the whole conv's int32 sums would not be exact
  std::vector<std::pair<int, memory>> fused_args;  // FusedOutputStageArgs, when fused
  std::vector<int64_t> out_dims;  // plain [N, OC, OH, OW]
  kernels::linalg::ConvGeometry geometry;
};

// The source zero point as oneDNN sees it: + 128 when int8 activations are flipped to uint8.
int32_t ZeroPointU8(int32_t zero_point, bool shift_source) { return zero_point + (shift_source ? 128 : 0); }

memory::data_type OneDnnType(ir::DataType t) {
  return t == ir::DataType::kInt8 ? memory::data_type::s8 : memory::data_type::u8;
}

class OneDnnQLinearConvKernel : public Kernel {
 public:
  // `shift_source`: int8 activations are handed to oneDNN as uint8 (x ^ 0x80 = x + 128, zero
  // point + 128), the same accumulator sum (x - zp) * w (see OneDnnInt8IsExact).
  // `tiles`: when set, the accumulators come from qfuse's channels-last tiles
  // (kernels/quant/nhwc_conv.h) instead of oneDNN, each tile requantized while in cache.
  // `split`: when set, oneDNN convolves the 7-bit part of the source and the outliers are
  // added back (source_split.h): exact with 8-bit weights below VNNI.
  // `fused`: when set (oneDNN's direct accumulators only), oneDNN runs the output stage.
  OneDnnQLinearConvKernel(int8::UnitRequantization u, ConvAttrs attrs, ir::Tensor weights, ir::DataType out_type,
                          bool shift_source, std::unique_ptr<Kernel> native,
                          std::optional<kernels::quant::NhwcConvWeights> tiles,
                          std::optional<SplitSourceWeights> split, std::optional<FusedOutputStage> fused,
                          std::string name)
      : tiles_(std::move(tiles)),
        split_(std::move(split)),
        fused_(std::move(fused)),
        split_offset_(split_.has_value() ? SplitSourceOffset(ZeroPointU8(u.x.zero_point, shift_source)) : 0),
        u_(std::move(u)),
        attrs_(std::move(attrs)),
        weights_(std::move(weights)),
        out_type_(out_type),
        shift_source_(shift_source),
        name_(std::move(name)),
        source_zero_point_(ZeroPointU8(u_.x.zero_point, shift_source) - split_offset_),
        native_(std::move(native)),
        out_channels_(weights_.dims()[0]),
        in_channels_(weights_.dims()[1] * attrs_.group),
        signed_weight_sum_(MaxChannelSignedWeightSum(weights_)) {
    const int32_t zp = ZeroPointU8(u_.x.zero_point, shift_source_);
    if (split_.has_value() && FloatSumsAreExact(weights_, std::max(zp, 255 - zp))) {
      float_exact_ = std::make_unique<FloatExactConv>(attrs_, weights_);
    }
  }

  TensorLayout output_layout(int output) const override {
    return output == 0 ? TensorLayout{LayoutKind::kChannelsLast, out_channels_} : TensorLayout{};
  }
  bool accepts_layout(int input, LayoutKind kind) const override {
    return kind == LayoutKind::kPlain ||
           (kind == LayoutKind::kChannelsLast && (input == ir::kUnitX || input == ir::kUnitResidual));
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    UseThreadsOf(*ctx.pool);  // before any primitive is made (onednn_engine.h)
    const Tensor* x = inputs.empty() ? nullptr : inputs[ir::kUnitX];
    const Tensor* r = inputs.size() > ir::kUnitResidual ? inputs[ir::kUnitResidual] : nullptr;
    if (x == nullptr || x->dtype() != u_.x.type || x->rank() != 4) {
      return absl::InvalidArgumentError(absl::StrCat("x must be a 4-D ", ir::DataTypeName(u_.x.type)));
    }
    if (u_.residual.has_value() && (r == nullptr || r->dtype() != u_.residual->type || r->rank() != 4)) {
      return absl::InvalidArgumentError(absl::StrCat("residual must be a 4-D ", ir::DataTypeName(u_.residual->type)));
    }
    const bool x_last = IsChannelsLast(ctx, ir::kUnitX);
    const std::vector<int64_t> x_dims = PlainDims(*x, x_last);
    if (x_dims[1] != in_channels_) {
      return absl::InvalidArgumentError(absl::StrCat("x ", ir::DimsToString(x_dims), " does not have ", in_channels_,
                                                     " channels"));
    }
    if (tiles_.has_value()) return RunTiles(ctx, *tiles_, *x, x_last, x_dims, r, outputs);
    if (CurrentInt8ConvEngine() != Int8ConvEngine::kAuto) {
      return RunOneDnn(ctx, inputs, *x, x_last, x_dims, r, outputs);
    }
    // Both engines write the same bytes: the faster one at this shape runs (engine_tuner.h).
    // The tiles' weights are prepared before the clock starts (oneDNN's are packed once, in
    // its warm-up call).
    const int engine = tuner_.Next(x_dims);
    if (engine != kTilesEngine) {
      return tuner_.Timed(x_dims, engine, [&] { return RunOneDnn(ctx, inputs, *x, x_last, x_dims, r, outputs); });
    }
    const std::shared_ptr<const kernels::quant::NhwcConvWeights> w = FallbackTiles();
    absl::Status status =
        tuner_.Timed(x_dims, engine, [&] { return RunTiles(ctx, *w, *x, x_last, x_dims, r, outputs); });
    ReleaseUnneededFallbackTiles();
    // A tiles call that fails (it has no shape limits oneDNN lacks) runs on oneDNN instead.
    return status.ok() ? status : RunOneDnn(ctx, inputs, *x, x_last, x_dims, r, outputs);
  }

 private:
  static constexpr int kTilesEngine = 1;  // EngineTuner index; oneDNN is 0

  // The accumulators from oneDNN (directly or through the split source), requantized by
  // qfuse's output stage or inside oneDNN (fused).
  absl::Status RunOneDnn(const KernelContext& ctx, absl::Span<const Tensor* const> inputs, const Tensor& x,
                         bool x_last, const std::vector<int64_t>& x_dims, const Tensor* r, absl::Span<Tensor> outputs) {
    // One image first: its accumulator size sets the slab (images per oneDNN call).
    std::vector<int64_t> image_dims = x_dims;
    image_dims[0] = 1;
    // No exact primitive (Make), here or at another shape below: the hand-written kernel.
    const auto native = [&] { return RunNativeInLayout(*native_, ctx, inputs, LayoutKind::kChannelsLast, 0, outputs); };
    absl::StatusOr<const Primitive*> image_prim = Find(image_dims);
    if (!image_prim.ok()) return native();
    const std::vector<int64_t>& io = (*image_prim)->out_dims;
    const int64_t image_acc_bytes = io[1] * io[2] * io[3] * static_cast<int64_t>(sizeof(int32_t));
    const int64_t batch = x_dims[0];
    // With the output stage inside oneDNN (for the whole batch too) no accumulators are kept:
    // one call for the batch.
    const bool fused = (*image_prim)->fused && (batch == 1 || FusedFor(x_dims));
    const int64_t slab =
        fused ? batch : std::clamp<int64_t>(kSlabAccBytes / std::max<int64_t>(image_acc_bytes, 1), 1, batch);
    Tensor x_nhwc, r_nhwc;
    QFUSE_ASSIGN_OR_RETURN(const uint8_t* src, ChannelsLastInt8(ctx, ir::kUnitX, x, x_dims, "x", &x_nhwc));
    const std::vector<int64_t> o = {batch, io[1], io[2], io[3]};
    QFUSE_ASSIGN_OR_RETURN(const uint8_t* res, ResidualBytes(ctx, r, o, &r_nhwc));
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(out_type_, {o[0], o[2], o[3], o[1]}));
    auto* y = static_cast<uint8_t*>(out.raw_data());
    const int64_t image_in = x_dims[1] * x_dims[2] * x_dims[3], image_out = o[1] * o[2] * o[3];
    if (!fused && (*image_prim)->geometry.IsPointwise() && attrs_.group == 1 && BandAccBytes().load() > 0) {
      const absl::Status banded = PointwiseBands(ctx, (*image_prim)->geometry, src, batch, res, y);
      if (absl::IsUnimplemented(banded)) return native();
      QFUSE_RETURN_IF_ERROR(banded);
      outputs[0] = std::move(out);
      return absl::OkStatus();
    }
    for (int64_t n0 = 0; n0 < batch; n0 += slab) {
      const int64_t images = std::min(slab, batch - n0);
      const uint8_t* res_slab = res == nullptr ? nullptr : res + n0 * image_out;
      std::vector<int64_t> slab_dims = x_dims;
      slab_dims[0] = images;
      if (split_.has_value() && CurrentInt8ConvEngine() == Int8ConvEngine::kAuto &&
          DenseOutliers(src + n0 * image_in, images * image_in)) {
        QFUSE_RETURN_IF_ERROR(DenseSlab(ctx, (*image_prim)->geometry, src + n0 * image_in, slab_dims, res_slab,
                                        y + n0 * image_out));
        continue;
      }
      const absl::StatusOr<const Primitive*> p = Find(slab_dims);
      if (absl::IsUnimplemented(p.status())) return native();
      QFUSE_RETURN_IF_ERROR(p.status());
      QFUSE_RETURN_IF_ERROR(OneDnnSlab(**p, src + n0 * image_in, images * image_in, res_slab, y + n0 * image_out));
    }
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

  // The accumulators from qfuse's channels-last tiles, requantized tile by tile.
  absl::Status RunTiles(const KernelContext& ctx, const kernels::quant::NhwcConvWeights& w, const Tensor& x,
                        bool x_last, const std::vector<int64_t>& x_dims, const Tensor* r,
                        absl::Span<Tensor> outputs) const {
    QFUSE_ASSIGN_OR_RETURN(const kernels::linalg::ConvGeometry g, Geometry(x_dims));
    const std::vector<int64_t> o = {x_dims[0], out_channels_, g.col[1], g.col[2]};
    Tensor x_nhwc, r_nhwc;
    QFUSE_ASSIGN_OR_RETURN(const uint8_t* src, ChannelsLastInt8(ctx, ir::kUnitX, x, x_dims, "x", &x_nhwc));
    QFUSE_ASSIGN_OR_RETURN(const uint8_t* res, ResidualBytes(ctx, r, o, &r_nhwc));
    QFUSE_ASSIGN_OR_RETURN(Tensor out, Tensor::CreateUninitialized(out_type_, {o[0], o[2], o[3], o[1]}));
    QFUSE_RETURN_IF_ERROR(TilesSlab(ctx, w, g, src, x_dims[0], res, static_cast<uint8_t*>(out.raw_data())));
    outputs[0] = std::move(out);
    return absl::OkStatus();
  }

  // The conv's geometry for input dims [N, C, H, W].
  absl::StatusOr<kernels::linalg::ConvGeometry> Geometry(const std::vector<int64_t>& x_dims) const {
    const std::vector<int64_t> kernel = {weights_.dims()[2], weights_.dims()[3]};
    return kernels::linalg::ResolveConv(attrs_, absl::MakeConstSpan(x_dims).subspan(2), kernel);
  }

  // `batch` channels-last images x of geometry g through the tiles into y.
  absl::Status TilesSlab(const KernelContext& ctx, const kernels::quant::NhwcConvWeights& w,
                         const kernels::linalg::ConvGeometry& g, const uint8_t* x, int64_t batch, const uint8_t* res,
                         uint8_t* y) const {
    kernels::quant::NhwcConvArgs args;
    args.geometry = &g;
    args.x = x;
    args.x_signed = u_.x.type == ir::DataType::kInt8;
    args.x_zero_point = u_.x.zero_point;
    args.batch = batch;
    args.pool = ctx.pool;
    const int64_t oc = out_channels_;
    kernels::quant::ForEachNhwcConvTile(args, w, [&](int64_t p0, int64_t p1, const int32_t* acc) {
      RequantizePixels(acc, res == nullptr ? nullptr : res + p0 * oc, y + p0 * oc, p1 - p0);
    });
    return absl::OkStatus();
  }

  // A pointwise unit on `batch` channels-last images of geometry g: the N x H x W pixels are
  // one list, cut into bands of at most BandAccBytes() of accumulators (at least
  // kMinBandPixels, at most an even share per thread). Each OpenMP task runs one band through
  // OneDnnSlab, from the split to the output stage on one core; oneDNN runs single-threaded
  // inside the parallel region. One parallel region per unit instead of three (split, oneDNN,
  // output stage): MobileNetV2 int8 7-11% faster (docs/performance.md). The band primitives
  // are made before the region: made inside it (where oneDNN sees one thread), its 1x1
  // kernel gave wrong accumulators (qlinear_conv_kernel_test caught it).
  absl::Status PointwiseBands(const KernelContext& ctx, const kernels::linalg::ConvGeometry& g, const uint8_t* src,
                              int64_t batch, const uint8_t* res, uint8_t* y) {
    const int64_t ic = in_channels_, oc = out_channels_;
    const int64_t pixels = batch * g.image_size();
    if (split_.has_value() && CurrentInt8ConvEngine() == Int8ConvEngine::kAuto && DenseOutliers(src, pixels * ic)) {
      return DenseSlab(ctx, g, src, {batch, ic, g.image[1], g.image[2]}, res, y);
    }
    const int64_t threads = std::max(1, omp_get_max_threads());
    const int64_t by_cache =
        std::max(kMinBandPixels, BandAccBytes().load() / (oc * static_cast<int64_t>(sizeof(int32_t))));
    const int64_t band = std::max<int64_t>(1, std::min(by_cache, (pixels + threads - 1) / threads));
    const int64_t bands = (pixels + band - 1) / band, last = pixels - (bands - 1) * band;
    QFUSE_ASSIGN_OR_RETURN(const Primitive* whole, Find({1, ic, 1, band}));
    QFUSE_ASSIGN_OR_RETURN(const Primitive* tail, Find({1, ic, 1, last}));
    absl::Status status;
    std::mutex status_mu;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < bands; ++b) {
      const int64_t p0 = b * band, n = b + 1 < bands ? band : last;
      absl::Status s = OneDnnSlab(b + 1 < bands ? *whole : *tail, src + p0 * ic, n * ic,
                                  res == nullptr ? nullptr : res + p0 * oc, y + p0 * oc);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(status_mu);
        if (status.ok()) status = std::move(s);
      }
    }
    return status;
  }

  // One oneDNN call on `bytes` channels-last source bytes (whole images, or a band of
  // pixels): the 7-bit part and the outliers (split source), the sign-flipped copy (INT8
  // below VNNI) or the bytes as they are; then the output stage. Scratch buffers and the
  // oneDNN stream and scratchpad are the calling thread's, reused.
  absl::Status OneDnnSlab(const Primitive& p, const uint8_t* src, int64_t bytes, const uint8_t* res,
                          uint8_t* y) const {
    thread_local std::vector<uint8_t> source;
    thread_local std::vector<int32_t> acc;
    thread_local SourceOutliers outliers;
    const uint8_t* conv_src = src;
    if (split_.has_value()) {
      GrowTo(source, bytes);
      SplitSource(src, shift_source_ ? 0x80 : 0, split_offset_, bytes / in_channels_, in_channels_, source.data(),
                  &outliers);
      conv_src = source.data();
      if (SplitStats()) {
        std::fprintf(stderr, "split source %s: %lld of %lld values outside [%d, %d] (%.3f%%)\n", name_.c_str(),
                     static_cast<long long>(outliers.total), static_cast<long long>(bytes), split_offset_,
                     split_offset_ + 127, bytes == 0 ? 0.0 : 100.0 * outliers.total / bytes);
      }
    } else if (shift_source_) {  // int8 -> uint8 by flipping the sign bit
      GrowTo(source, bytes);
      uint8_t* flipped = source.data();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < bytes; ++i) flipped[i] = src[i] ^ 0x80;
      conv_src = source.data();
    }
    const std::vector<int64_t>& o = p.out_dims;
    const int64_t pixels = o[0] * o[2] * o[3];
    if (!p.fused) GrowTo(acc, pixels * o[1]);
    if (!p.chunks.empty()) {
      QFUSE_RETURN_IF_ERROR(RunChannelChunks(p.chunks, conv_src, in_channels_, bytes / in_channels_,
                                             source_zero_point_, acc.data(), pixels * o[1]));
      Requantize(acc.data(), res, y, pixels, split_.has_value() ? &p.geometry : nullptr, outliers);
      return absl::OkStatus();
    }
    memory src_mem(p.src_desc, Engine(), const_cast<uint8_t*>(conv_src));
    memory dst(p.dst_desc, Engine(), p.fused ? static_cast<void*>(y) : static_cast<void*>(acc.data()));
    int32_t zp = source_zero_point_;
    memory zp_mem({{1}, memory::data_type::s32, memory::format_tag::x}, Engine(), &zp);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, dst}};
    if (zp != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem);
    args.insert(p.fused_args.begin(), p.fused_args.end());
    AddThreadScratchpad(p, &args);
    try {
      p.conv.execute(Stream(), args);
      Stream().wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution failed: ", e.what()));
    }
    if (p.fused) return absl::OkStatus();
    Requantize(acc.data(), res, y, pixels, split_.has_value() ? &p.geometry : nullptr, outliers);
    return absl::OkStatus();
  }

  bool DenseOutliers(const uint8_t* src, int64_t bytes) const {
    return DenseSplitOutliers(src, bytes, shift_source_ ? 0x80 : 0, split_offset_);
  }

  // Images x_dims of geometry g whose source is dense in values outside the split window:
  // exact float32 sums where they fit (float_exact_conv.h), else qfuse's tiles.
  absl::Status DenseSlab(const KernelContext& ctx, const kernels::linalg::ConvGeometry& g, const uint8_t* src,
                         const std::vector<int64_t>& x_dims, const uint8_t* res, uint8_t* y) const {
    if (float_exact_ == nullptr) return TilesSlab(ctx, *FallbackTiles(), g, src, x_dims[0], res, y);
    thread_local std::vector<int32_t> acc;
    static const SourceOutliers kNoOutliers;
    const int64_t pixels = x_dims[0] * g.col_size();
    GrowTo(acc, pixels * out_channels_);
    QFUSE_RETURN_IF_ERROR(float_exact_->Accumulate(src, shift_source_ ? 0x80 : 0,
                                                   ZeroPointU8(u_.x.zero_point, shift_source_), x_dims, acc.data()));
    Requantize(acc.data(), res, y, pixels, nullptr, kNoOutliers);
    return absl::OkStatus();
  }

  // The tiles' weights, prepared on first use (the engine tuning's tiles runs, and units whose
  // source is dense in outliers); a caller keeps its reference while it runs.
  std::shared_ptr<const kernels::quant::NhwcConvWeights> FallbackTiles() const {
    std::lock_guard<std::mutex> lock(fallback_mu_);
    if (fallback_tiles_ == nullptr) {
      fallback_tiles_ = std::make_shared<const kernels::quant::NhwcConvWeights>(
          kernels::quant::PrepareNhwcConvWeights(weights_, attrs_.group, {0}));
    }
    return fallback_tiles_;
  }

  // Frees the tiles' weights (about 3 bytes per weight) unless some shape chose the tiles or a
  // dense source may need them (DenseSlab without float-exact sums): while a unit is being tuned
  // they are prepared for each of its tiles calls and freed after it, so that the units' tilings
  // never coexist (ResNet-18 int8 at 224x224, batch 1: peak memory 118 MiB, against 143 MiB
  // with every unit's kept and 107 MiB without the tuning).
  void ReleaseUnneededFallbackTiles() {
    if (tuner_.AnyChose(kTilesEngine) || (split_.has_value() && float_exact_ == nullptr)) return;
    std::lock_guard<std::mutex> lock(fallback_mu_);
    fallback_tiles_.reset();
  }

  // The residual in channels-last order (a reordered copy in *copy when it came plain), or
  // null without one.
  static absl::StatusOr<const uint8_t*> ResidualBytes(const KernelContext& ctx, const Tensor* r,
                                                      const std::vector<int64_t>& o, Tensor* copy) {
    if (r == nullptr) return nullptr;
    return ChannelsLastInt8(ctx, ir::kUnitResidual, *r, o, "residual", copy);
  }

  static bool IsChannelsLast(const KernelContext& ctx, int input) {
    return InputKind(ctx, input) == LayoutKind::kChannelsLast;
  }

  static std::vector<int64_t> PlainDims(const Tensor& t, bool channels_last) {
    return channels_last ? std::vector<int64_t>{t.dims()[0], t.dims()[3], t.dims()[1], t.dims()[2]} : t.dims();
  }

  // The output stage per pixel: its out_channels_ consecutive accumulators (+ bias, with
  // the residual's pixel) to out_type_ bytes, after adding the source's outliers when
  // `geometry` is set. It runs on oneDNN's OpenMP threads (this file is built with
  // -fopenmp): handing it to the executor's pool instead would leave the OpenMP threads
  // spinning against it for the same cores.
  void Requantize(int32_t* acc, const uint8_t* res, uint8_t* out, int64_t pixels,
                  const kernels::linalg::ConvGeometry* geometry, const SourceOutliers& outliers) const {
    const int64_t oc = out_channels_;
    const int64_t tasks = (pixels + kPixelsPerTask - 1) / kPixelsPerTask;
#pragma omp parallel for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t p = task * kPixelsPerTask, n = std::min(pixels - p, kPixelsPerTask);
      if (geometry != nullptr) AddSourceOutliers(*geometry, outliers, *split_, p, p + n, acc + p * oc);
      RequantizePixels(acc + p * oc, res == nullptr ? nullptr : res + p * oc, out + p * oc, n);
    }
  }

  // `pixels` consecutive pixels of out_channels_ accumulators (+ bias, with the residual's
  // pixels b, or null) to out_type_ bytes.
  void RequantizePixels(const int32_t* a, const uint8_t* b, uint8_t* y, int64_t pixels) const {
    const int64_t oc = out_channels_;
    const int32_t* bias = u_.bias.empty() ? nullptr : u_.bias.data();
    const int32_t rzp = u_.residual.has_value() ? u_.residual->zero_point : 0;
    const bool out_signed = out_type_ == ir::DataType::kInt8;
    const bool res_signed = u_.residual.has_value() && u_.residual->type == ir::DataType::kInt8;
    if (u_.float_epilogue) {
      // A non-linear activation (output_stage.h's float epilogue, as the hand-written kernel's
      // StoreActivated): dequantize, the activation in float32, QuantizeLinear; in one pass
      // where activated_pixels.h has the activation's form.
      if (u_.stage.ActivatePixels(u_.spec, a, bias, b, res_signed, rzp, oc, pixels, y, out_signed)) return;
      thread_local std::vector<float> real;
      GrowTo(real, pixels * oc);
      res_signed ? u_.stage.DequantizePixels(a, bias, reinterpret_cast<const int8_t*>(b), rzp, oc, pixels, real.data())
                 : u_.stage.DequantizePixels(a, bias, b, rzp, oc, pixels, real.data());
      ir::ApplyUnitActivation(u_.spec, absl::MakeSpan(real.data(), pixels * oc), IsaAllowed(Isa::kAvx2));
      out_signed ? u_.stage.QuantizeRealRow(real.data(), pixels * oc, reinterpret_cast<int8_t*>(y))
                 : u_.stage.QuantizeRealRow(real.data(), pixels * oc, y);
      return;
    }
    if (out_signed) {
      res_signed ? u_.stage.QuantizePixels(a, bias, reinterpret_cast<const int8_t*>(b), rzp, oc, pixels,
                                           reinterpret_cast<int8_t*>(y))
                 : u_.stage.QuantizePixels(a, bias, b, rzp, oc, pixels, reinterpret_cast<int8_t*>(y));
    } else {
      res_signed ? u_.stage.QuantizePixels(a, bias, reinterpret_cast<const int8_t*>(b), rzp, oc, pixels, y)
                 : u_.stage.QuantizePixels(a, bias, b, rzp, oc, pixels, y);
    }
  }

  bool FusedFor(const std::vector<int64_t>& x_dims) {
    absl::StatusOr<const Primitive*> p = Find(x_dims);
    return p.ok() && (*p)->fused;
  }

  // The primitive for x_dims, made once; a shape oneDNN cannot run exactly is remembered too.
  absl::StatusOr<const Primitive*> Find(const std::vector<int64_t>& x_dims) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(x_dims);
    if (it != cache_.end()) return it->second.get();
    auto failed = failed_.find(x_dims);
    if (failed != failed_.end()) return failed->second;
    absl::StatusOr<std::unique_ptr<Primitive>> made = Make(x_dims);
    if (!made.ok()) return failed_.emplace(x_dims, made.status()).first->second;
    return cache_.emplace(x_dims, *std::move(made)).first->second.get();
  }

  absl::StatusOr<std::unique_ptr<Primitive>> Make(const std::vector<int64_t>& x_dims) const {
    QFUSE_ASSIGN_OR_RETURN(ConvDims d, ResolveConvDims(attrs_, x_dims, weights_.dims()));
    auto p = std::make_unique<Primitive>();
    p->out_dims = d.output;
    QFUSE_ASSIGN_OR_RETURN(p->geometry, Geometry(x_dims));
    const memory::data_type src_type =
        shift_source_ || split_.has_value() ? memory::data_type::u8 : OneDnnType(u_.x.type);
    // A fresh attribute each time: copies of a dnnl::primitive_attr share one object.
    const std::function<dnnl::primitive_attr()> base_attr = [&] {
      dnnl::primitive_attr attr;
      if (source_zero_point_ != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      return attr;
    };
    std::optional<NhwcConv> fused;
    if (fused_.has_value()) {
      fused = MakeFusedNhwcConv(*fused_, x_dims, d, weights_, src_type, OneDnnType(out_type_), base_attr);
    }
    if (fused.has_value()) {
      static_cast<NhwcConv&>(*p) = *std::move(fused);
      p->fused = true;
      p->fused_args = FusedOutputStageArgs(*fused_, p->bias_desc);
    } else {
      try {
        static_cast<NhwcConv&>(*p) =
            MakeNhwcConv(x_dims, d, weights_, src_type, memory::data_type::s8, memory::data_type::s32, base_attr());
      } catch (const dnnl::error& e) {
        return absl::UnimplementedError(absl::StrCat("oneDNN refuses this convolution: ", e.what()));
      }
    }
    // Below VNNI a depthwise unit is exact only on oneDNN's int8 depthwise kernels
    // (int8_conv_engine.h); another implementation would pair products in int16.
    if (IsDepthwise(weights_, attrs_.group) && !split_.has_value() && !OneDnnHasVnni() &&
        !IsExactInt8DepthwiseImplementation(p->implementation)) {
      return absl::UnimplementedError(absl::StrCat("oneDNN's ", p->implementation, " is not exact for this depthwise unit"));
    }
    // int32 sums rounded through float32 (int8_conv_engine.h; a fused stage has its own bound):
    // input-channel ranges whose sums stay exact (channel_chunks.h), else no oneDNN.
    if (!p->fused && !OneDnnInt32SumsAreExact(p->implementation, signed_weight_sum_,
                                              src_type == memory::data_type::s8, source_zero_point_ != 0)) {
      QFUSE_ASSIGN_OR_RETURN(p->chunks, MakeChannelChunks(attrs_, x_dims, weights_, src_type, source_zero_point_ != 0,
                                                          base_attr));
      static_cast<NhwcConv&>(*p) = NhwcConv();  // the whole conv's primitive and weights: unused
    }
    return p;
  }

  const std::optional<kernels::quant::NhwcConvWeights> tiles_;
  const std::optional<SplitSourceWeights> split_;
  const std::optional<FusedOutputStage> fused_;
  const int32_t split_offset_;
  mutable std::mutex fallback_mu_;
  mutable std::shared_ptr<const kernels::quant::NhwcConvWeights> fallback_tiles_;
  const int8::UnitRequantization u_;
  const ConvAttrs attrs_;
  const ir::Tensor weights_;
  const ir::DataType out_type_;
  const bool shift_source_;
  const std::string name_;  // the node's, for QFUSE_SPLIT_STATS
  const int32_t source_zero_point_;
  const std::unique_ptr<Kernel> native_;
  std::unique_ptr<FloatExactConv> float_exact_;  // set where its sums are exact (split units)
  const int64_t out_channels_;
  const int64_t in_channels_;
  const int64_t signed_weight_sum_;  // MaxChannelSignedWeightSum(weights_)
  std::mutex mu_;
  std::map<std::vector<int64_t>, std::unique_ptr<Primitive>> cache_;
  std::map<std::vector<int64_t>, absl::Status> failed_;
  EngineTuner tuner_{name_, {"onednn", "tiles"}};
};

std::atomic<int64_t>& FloatEpilogueUnitCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

}  // namespace

int64_t ChannelsLastFloatEpilogueUnits() { return FloatEpilogueUnitCount().load(); }

void SetPointwiseBandBytes(int64_t bytes) { BandAccBytes().store(std::max<int64_t>(0, bytes)); }

absl::StatusOr<std::unique_ptr<Kernel>> CreateIntegerUnitKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> native, int8::CreateQLinearUnitKernel(node));
  if (!UseOneDnn()) return native;
  QFUSE_ASSIGN_OR_RETURN(int8::UnitRequantization u, int8::ReadUnitRequantization(node));
  const ir::DataType out_type = node.output(0)->type().dtype;
  const ir::Value* w = node.input(ir::kUnitW);
  if (u.spec.base_op != ir::UnitBaseOp::kConv || w->initializer() == nullptr ||
      w->initializer()->rank() != 4 || w->initializer()->dtype() != ir::DataType::kInt8 ||
      (out_type != ir::DataType::kInt8 && out_type != ir::DataType::kUint8) ||
      (u.x.type != ir::DataType::kInt8 && u.x.type != ir::DataType::kUint8)) {
    return native;
  }
  for (int64_t zp : w->type().quant->zero_points) {
    if (zp != 0) return native;
  }
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, kernels::linalg::ParseConvAttrs(node, /*transpose=*/false));
  std::optional<kernels::quant::NhwcConvWeights> tiles;
  std::optional<SplitSourceWeights> split;
  if (UseTiles(u.x.type, *w->initializer(), attrs.group)) {
    tiles = kernels::quant::PrepareNhwcConvWeights(*w->initializer(), attrs.group, {0});
  } else if (!OneDnnInt8IsExact(u.x.type, *w->initializer(), attrs.group)) {
    split = PrepareSplitSourceWeights(*w->initializer(), attrs.group);
  }
  const bool shift_source = u.x.type == ir::DataType::kInt8 && !OneDnnHasVnni();
  std::optional<FusedOutputStage> fused;  // needs oneDNN's own accumulators and one term
  if (!tiles.has_value() && !split.has_value() && !u.residual.has_value() && !u.float_epilogue) {
    const bool s8 = u.x.type == ir::DataType::kInt8 && !shift_source;
    fused = MakeFusedOutputStage(u.stage, *w->initializer(), u.bias, s8 ? FusedSource::kInt8 : FusedSource::kUint8);
  }
  if (u.float_epilogue) FloatEpilogueUnitCount().fetch_add(1);
  return std::unique_ptr<Kernel>(new OneDnnQLinearConvKernel(
      std::move(u), std::move(attrs), *w->initializer(), out_type, shift_source, std::move(native), std::move(tiles),
      std::move(split), std::move(fused), node.name()));
}

}  // namespace qfuse::runtime::onednn
