#include "runtime/onednn/onednn_engine.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/quant/byte_transpose.h"

extern "C" void omp_set_num_threads(int num_threads);  // libgomp, oneDNN's threading runtime
extern "C" int omp_get_max_threads();

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;

std::atomic<int>& UseFlag() {
  static std::atomic<int> use{[] {
    const char* engine = std::getenv("QFUSE_ENGINE");
    return engine == nullptr || std::strcmp(engine, "native") != 0 ? 1 : 0;
  }()};
  return use;
}

dnnl::cpu_isa OneDnnIsa(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
    case Isa::kAvx2: return dnnl::cpu_isa::avx2;
    case Isa::kAvx2Vnni: return dnnl::cpu_isa::avx2_vnni;
    case Isa::kAvx512: return dnnl::cpu_isa::avx512_core;
    case Isa::kAvx512Vnni: return dnnl::cpu_isa::avx512_core_vnni;
    case Isa::kAmx: return dnnl::cpu_isa::all;
  }
  return dnnl::cpu_isa::all;
}

// The most reorders RunKeptReorder keeps.
constexpr size_t kMaxKeptReorders = 512;

// A kept reorder: dims, element type, source and destination layouts, OpenMP thread count (a
// primitive keeps the count in force when it is made).
using ReorderKey = std::tuple<std::vector<int64_t>, memory::data_type, memory::format_tag, memory::format_tag, int>;

// Runs the reorder from `src` (dims and layout `from_tag`) to `dst` (`to_tag`). Making one
// costs about 1 us even when oneDNN's own cache has it, as much as reordering a small tensor,
// so the primitives are kept per ReorderKey; only those without a scratchpad (the plain /
// blocked / channels-last layout changes are), so one primitive may run on several threads at
// once.
void RunKeptReorder(const std::vector<int64_t>& dims, memory::data_type type, memory::format_tag from_tag,
                    memory::format_tag to_tag, const void* src, void* dst) {
  static std::mutex mu;
  static auto* kept = new std::map<ReorderKey, dnnl::reorder>();
  const memory::dims d(dims.begin(), dims.end());
  const memory::desc from(d, type, from_tag), to(d, type, to_tag);
  dnnl::reorder reorder;
  {
    std::lock_guard<std::mutex> lock(mu);
    const ReorderKey key{dims, type, from_tag, to_tag, omp_get_max_threads()};
    auto it = kept->find(key);
    if (it != kept->end()) {
      reorder = it->second;  // a reference-counted handle: safe to run after a clear
    } else {
      // Made before it is kept: a reorder oneDNN refuses (it throws) leaves no entry.
      const dnnl::reorder::primitive_desc pd(Engine(), from, Engine(), to);
      reorder = dnnl::reorder(pd);
      if (pd.scratchpad_desc().get_size() == 0) {
        if (kept->size() >= kMaxKeptReorders) kept->clear();  // many input shapes: start again
        kept->emplace(key, reorder);
      }
    }
  }
  memory src_mem(from, Engine(), const_cast<void*>(src)), dst_mem(to, Engine(), dst);
  reorder.execute(Stream(), src_mem, dst_mem);
  Stream().wait();
}

// The float reorder between the plain and the blocked layout of `plain_dims`.
void ReorderFloat(const std::vector<int64_t>& plain_dims, int64_t block, bool to_blocked, const void* src,
                  void* dst) {
  const memory::format_tag plain = memory::format_tag::nchw, blocked = BlockedTag(block);
  RunKeptReorder(plain_dims, memory::data_type::f32, to_blocked ? plain : blocked, to_blocked ? blocked : plain, src,
                 dst);
}

}  // namespace

bool UseOneDnn() { return UseFlag().load(std::memory_order_relaxed) != 0 && IsaAllowed(Isa::kAvx2); }

void SetUseOneDnn(bool use) { UseFlag().store(use ? 1 : 0, std::memory_order_relaxed); }

const dnnl::engine& Engine() {
  static const dnnl::engine* engine = [] {
    // No cap: all of oneDNN's levels, AMX included (qfuse's own detection stops at VNNI).
    dnnl::set_max_cpu_isa(IsaCap() >= Isa::kAmx ? dnnl::cpu_isa::all : OneDnnIsa(MaxIsa()));
    return new dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return *engine;
}

dnnl::stream& Stream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

int64_t BlockSize() { return IsaAllowed(Isa::kAvx512) ? 16 : 8; }

memory::format_tag BlockedTag(int64_t block) {
  return block == 16 ? memory::format_tag::nChw16c : memory::format_tag::nChw8c;
}

void UseThreadsOf(const ThreadPool& pool) {
  // OpenMP's thread count is a setting of the calling thread: read, not remembered, since
  // other code (or the end of an enclosing parallel region) may change it.
  const int n = pool.num_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

std::vector<int64_t> BlockedDims(const std::vector<int64_t>& plain, int64_t block) {
  return {plain[0], (plain[1] + block - 1) / block, plain[2], plain[3], block};
}

absl::StatusOr<ir::Tensor> BlockedToPlain(const ThreadPool& pool, const ir::Tensor& blocked, int64_t channels) {
  if (blocked.rank() != 5 || (blocked.dims()[4] != 8 && blocked.dims()[4] != 16) ||
      blocked.dims()[1] * blocked.dims()[4] < channels || (blocked.dims()[1] - 1) * blocked.dims()[4] >= channels) {
    return absl::InternalError(absl::StrCat("a channel-blocked tensor ", ir::DimsToString(blocked.dims()),
                                            " cannot hold ", channels, " channels"));
  }
  const int64_t block = blocked.dims()[4];
  const std::vector<int64_t> plain_dims = {blocked.dims()[0], channels, blocked.dims()[2], blocked.dims()[3]};
  QFUSE_ASSIGN_OR_RETURN(ir::Tensor plain, ir::Tensor::CreateUninitialized(ir::DataType::kFloat32, plain_dims));
  UseThreadsOf(pool);
  ReorderFloat(plain_dims, block, /*to_blocked=*/false, blocked.raw_data(), plain.raw_data());
  return plain;
}

absl::StatusOr<ir::Tensor> ToPlain(const ThreadPool& pool, const ir::Tensor& t, const TensorLayout& layout) {
  switch (layout.kind) {
    case LayoutKind::kPlain: return t;
    case LayoutKind::kChannelBlocked: return BlockedToPlain(pool, t, layout.channels);
    case LayoutKind::kChannelsLast: {
      if (t.rank() != 4 || t.dims()[3] != layout.channels ||
          (t.dtype() != ir::DataType::kInt8 && t.dtype() != ir::DataType::kUint8)) {
        return absl::InternalError(absl::StrCat("a channels-last tensor ", ir::DimsToString(t.dims()), " of ",
                                                ir::DataTypeName(t.dtype()), " cannot hold ", layout.channels,
                                                " int8 channels"));
      }
      const std::vector<int64_t> plain_dims = {t.dims()[0], t.dims()[3], t.dims()[1], t.dims()[2]};
      QFUSE_ASSIGN_OR_RETURN(ir::Tensor plain, ir::Tensor::CreateUninitialized(t.dtype(), plain_dims));
      ReorderInt8(pool, t, /*src_channels_last=*/true, plain_dims, plain.raw_data());
      return plain;
    }
  }
  return absl::InternalError("unknown layout");
}

void ReorderInt8(const ThreadPool& pool, const ir::Tensor& src, bool src_channels_last,
                 const std::vector<int64_t>& plain_dims, void* dst) {
  // Per image a [H*W][C] byte matrix one way and [C][H*W] the other: qfuse's 16 x 16 tile
  // transpose, 1.5-2.8x as fast as executing oneDNN's int8 reorder on SE-block sizes
  // (tests/runtime/onednn:int8_reorder_benchmark), except with fewer than 16 rows or columns
  // (3 channels), which the tiles copy byte by byte and oneDNN's reorder (kept, as the float
  // ones) does 1.8-2.4x as fast.
  const int64_t channels = plain_dims[1], pixels = plain_dims[2] * plain_dims[3];
  const int64_t rows = src_channels_last ? pixels : channels, cols = src_channels_last ? channels : pixels;
  if (rows == 1 || cols == 1) {  // the same bytes in both orders
    std::memcpy(dst, src.raw_data(), static_cast<size_t>(plain_dims[0] * rows * cols));
    return;
  }
  UseThreadsOf(pool);
  if (kernels::quant::TileTransposeFits(rows, cols)) {
    kernels::quant::TransposeBytes(pool, static_cast<const uint8_t*>(src.raw_data()), plain_dims[0], rows, cols,
                                   static_cast<uint8_t*>(dst));
    return;
  }
  const memory::data_type type = src.dtype() == ir::DataType::kInt8 ? memory::data_type::s8 : memory::data_type::u8;
  const memory::format_tag nchw = memory::format_tag::nchw, nhwc = memory::format_tag::nhwc;
  RunKeptReorder(plain_dims, type, src_channels_last ? nhwc : nchw, src_channels_last ? nchw : nhwc, src.raw_data(),
                 dst);
}

absl::StatusOr<const uint8_t*> ChannelsLastInt8(const KernelContext& ctx, int input, const ir::Tensor& t,
                                                const std::vector<int64_t>& plain_dims, const char* what,
                                                ir::Tensor* copy) {
  const bool last = InputKind(ctx, input) == LayoutKind::kChannelsLast;
  const std::vector<int64_t>& d = t.dims();
  const std::vector<int64_t> dims = last && d.size() == 4 ? std::vector<int64_t>{d[0], d[3], d[1], d[2]} : d;
  if (dims != plain_dims) {
    return absl::InvalidArgumentError(absl::StrCat(what, " shape ", ir::DimsToString(dims), " differs from the expected ",
                                                   ir::DimsToString(plain_dims)));
  }
  // With one channel or one pixel per image, NCHW and NHWC order the same bytes alike (a
  // grayscale image, a pooled vector): read them in place.
  if (last || dims[1] == 1 || dims[2] * dims[3] == 1) return static_cast<const uint8_t*>(t.raw_data());
  QFUSE_ASSIGN_OR_RETURN(*copy, ir::Tensor::CreateUninitialized(t.dtype(), {dims[0], dims[2], dims[3], dims[1]}));
  ReorderInt8(*ctx.pool, t, /*src_channels_last=*/false, dims, copy->raw_data());
  return static_cast<const uint8_t*>(copy->raw_data());
}

void PlainToBlocked(const ThreadPool& pool, const ir::Tensor& plain, int64_t block, void* dst_data) {
  UseThreadsOf(pool);
  ReorderFloat(plain.dims(), block, /*to_blocked=*/true, plain.raw_data(), dst_data);
}

ir::Tensor NewBlocked(const std::vector<int64_t>& dims, int64_t channels, int64_t block) {
  return channels % block == 0 ? ir::Tensor::Uninitialized(ir::DataType::kFloat32, BlockedDims(dims, block))
                               : ir::Tensor(ir::DataType::kFloat32, BlockedDims(dims, block));
}

absl::Status RunNativeInLayout(Kernel& native, const KernelContext& ctx, absl::Span<const ir::Tensor* const> inputs,
                               LayoutKind out_kind, int64_t block, absl::Span<ir::Tensor> outputs) {
  std::vector<ir::Tensor> plain(inputs.size());
  std::vector<const ir::Tensor*> ptrs(inputs.begin(), inputs.end());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr && InputKind(ctx, static_cast<int>(i)) != LayoutKind::kPlain) {
      QFUSE_ASSIGN_OR_RETURN(plain[i], ToPlain(*ctx.pool, *inputs[i], ctx.input_layouts[i]));
      ptrs[i] = &plain[i];
    }
  }
  const KernelContext plain_ctx{ctx.pool, nullptr};
  ir::Tensor out;
  QFUSE_RETURN_IF_ERROR(native.Run(plain_ctx, ptrs, absl::MakeSpan(&out, 1)));
  const std::vector<int64_t>& d = out.dims();
  if (out.rank() != 4) {
    return absl::InternalError(absl::StrCat("fallback output ", ir::DimsToString(d), " is not 4-D"));
  }
  if (out_kind == LayoutKind::kChannelsLast) {
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::CreateUninitialized(out.dtype(), {d[0], d[2], d[3], d[1]}));
    ReorderInt8(*ctx.pool, out, /*src_channels_last=*/false, d, outputs[0].raw_data());
  } else {
    outputs[0] = NewBlocked(d, d[1], block);
    PlainToBlocked(*ctx.pool, out, block, outputs[0].raw_data());
  }
  return absl::OkStatus();
}

}  // namespace qfuse::runtime::onednn
