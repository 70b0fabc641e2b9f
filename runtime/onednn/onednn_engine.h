// qfuse's use of oneDNN (Debian's libdnnl-dev 2.6): whether the float convolutions run on
// it, the one CPU engine, and the channel-blocked activation layout its kernels exchange.
//
// Channel-blocked layout: a 4-D activation [N, C, H, W] stored as
// [N, ceil(C / B), H, W, B] (oneDNN's nChw16c / nChw8c) with B = 16 when AVX-512 is
// allowed, else 8; channels past C are zero. Kernels that produce it say so
// (Kernel::output_layout, LayoutKind::kChannelBlocked); the executor converts to plain
// for everyone else. INT8/UINT8 activations between oneDNN integer kernels are
// channels-last (LayoutKind::kChannelsLast).
#ifndef QFUSE_RUNTIME_ONEDNN_ONEDNN_ENGINE_H_
#define QFUSE_RUNTIME_ONEDNN_ONEDNN_ENGINE_H_

#include <cstdint>

#include <oneapi/dnnl/dnnl.hpp>

#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "runtime/kernel.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::onednn {

// True when float Conv / Conv units run on oneDNN: on by default on AVX2 machines;
// QFUSE_ENGINE=native (or SetUseOneDnn(false)) keeps the hand-written kernels; the
// scalar ISA cap never uses oneDNN (it has no portable C++ path).
bool UseOneDnn();
void SetUseOneDnn(bool use);

// The CPU engine and the calling thread's stream on it (a stream is not shared between
// threads: the pointwise bands run oneDNN from several at once). The first call applies the ISA cap
// (runtime/cpu_isa.h) to oneDNN; later changes of the cap do not reach oneDNN.
const dnnl::engine& Engine();
dnnl::stream& Stream();

// Channels per block of the blocked layout at the current ISA cap: 16 or 8.
int64_t BlockSize();
// oneDNN's format tag for a blocked 4-D activation with `block` channels per block.
dnnl::memory::format_tag BlockedTag(int64_t block);

// Sets the OpenMP threads of the calling thread to the pool's size (once per change). A oneDNN
// primitive keeps the thread count in force when it is made and asks for that many threads on
// every execution, so kernels call this before making primitives as well as before running them.
void UseThreadsOf(const ThreadPool& pool);

// [N, ceil(C/B), H, W, B] for plain dims [N, C, H, W].
std::vector<int64_t> BlockedDims(const std::vector<int64_t>& plain, int64_t block);

// Converts a blocked tensor (5-D, see above) holding `channels` logical channels back to
// a plain FLOAT [N, channels, H, W] tensor.
absl::StatusOr<ir::Tensor> BlockedToPlain(const ThreadPool& pool, const ir::Tensor& blocked, int64_t channels);
// Converts a tensor in `layout` (runtime/kernel.h) to plain NCHW.
absl::StatusOr<ir::Tensor> ToPlain(const ThreadPool& pool, const ir::Tensor& t, const TensorLayout& layout);
// Reorders an INT8/UINT8 tensor between plain [N, C, H, W] and channels-last [N, H, W, C]
// (`plain_dims` are the NCHW dims either way); `dst` must have the other layout's size.
void ReorderInt8(const ThreadPool& pool, const ir::Tensor& src, bool src_channels_last,
                 const std::vector<int64_t>& plain_dims, void* dst);
// The INT8/UINT8 4-D tensor `t`, input `input` of a kernel, in channels-last [N, H, W, C]
// order: t's own bytes when the executor handed it over channels-last or when both orders are
// the same bytes (one channel or one pixel per image), else a reordered copy kept in *copy. InvalidArgument, naming `what`, when its [N, C, H, W] dims are not
// `plain_dims`.
absl::StatusOr<const uint8_t*> ChannelsLastInt8(const KernelContext& ctx, int input, const ir::Tensor& t,
                                                const std::vector<int64_t>& plain_dims, const char* what,
                                                ir::Tensor* copy);
// Reorders a plain FLOAT [N, C, H, W] tensor into `dst`, a buffer of the blocked layout.
void PlainToBlocked(const ThreadPool& pool, const ir::Tensor& plain, int64_t block, void* dst);
// A blocked buffer for plain dims `dims` with `channels` channels: uninitialised when the
// channels fill whole blocks (the writer covers every element), zeroed otherwise.
ir::Tensor NewBlocked(const std::vector<int64_t>& dims, int64_t channels, int64_t block);

// The layout kind of input `input` as the executor handed it over.
inline LayoutKind InputKind(const KernelContext& ctx, int input) {
  return ctx.input_layouts == nullptr ? LayoutKind::kPlain : ctx.input_layouts[input].kind;
}

// The fallback of a oneDNN kernel for a shape oneDNN refuses: runs `native` (the
// hand-written kernel) on plain copies of the inputs that arrived in another layout and
// returns its output 0 in `out_kind` (kChannelBlocked with `block` channels per block, or
// kChannelsLast), the layout the oneDNN kernel promised.
absl::Status RunNativeInLayout(Kernel& native, const KernelContext& ctx, absl::Span<const ir::Tensor* const> inputs,
                               LayoutKind out_kind, int64_t block, absl::Span<ir::Tensor> outputs);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_ONEDNN_ENGINE_H_
