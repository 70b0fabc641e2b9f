#include "runtime/onednn/channel_chunks.h"

#include <atomic>
#include <cstring>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/grow_buffer.h"
#include "base/status_macros.h"
#include "runtime/onednn/int8_conv_engine.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {

using dnnl::memory;

namespace {

// Weights [O, I, KH, KW] restricted to input channels [begin, end).
ir::Tensor ChannelRange(const ir::Tensor& weights, int64_t begin, int64_t end) {
  const std::vector<int64_t>& d = weights.dims();
  const int64_t taps = d[2] * d[3], channels = end - begin;
  ir::Tensor range(ir::DataType::kInt8, {d[0], channels, d[2], d[3]});
  const auto from = weights.values<int8_t>();
  auto to = range.mutable_values<int8_t>();
  for (int64_t o = 0; o < d[0]; ++o) {
    std::memcpy(&to[o * channels * taps], &from[(o * d[1] + begin) * taps], static_cast<size_t>(channels * taps));
  }
  return range;
}

}  // namespace

std::atomic<int64_t>& ChunkSetCount() {
  static std::atomic<int64_t> count{0};
  return count;
}

absl::StatusOr<std::vector<ChannelChunk>> MakeChannelChunks(const kernels::linalg::ConvAttrs& attrs,
                                                            const std::vector<int64_t>& x_dims,
                                                            const ir::Tensor& weights,
                                                            memory::data_type src_type, bool source_zero_point,
                                                            const std::function<dnnl::primitive_attr()>& base_attr) {
  if (attrs.group != 1 || weights.rank() != 4 || weights.dtype() != ir::DataType::kInt8) {
    return absl::UnimplementedError("channel ranges need a group-1 int8 convolution");
  }
  const int64_t channels = weights.dims()[1];
  const bool int8_source = src_type == memory::data_type::s8;
  // The fewest ranges whose sums stay within the bound for any implementation: an empty
  // implementation name is never one of the exempt ones.
  for (int64_t count = 2; count <= kMaxChannelChunks && count <= channels; ++count) {
    std::vector<ir::Tensor> ranges;
    bool within = true;
    for (int64_t i = 0; i < count && within; ++i) {
      ranges.push_back(ChannelRange(weights, channels * i / count, channels * (i + 1) / count));
      within = OneDnnInt32SumsAreExact("", MaxChannelSignedWeightSum(ranges.back()), int8_source, source_zero_point);
    }
    if (!within) continue;
    std::vector<ChannelChunk> chunks(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      ChannelChunk& chunk = chunks[i];
      chunk.begin = channels * i / count;
      chunk.end = channels * (i + 1) / count;
      std::vector<int64_t> dims = x_dims;
      dims[1] = chunk.end - chunk.begin;
      QFUSE_ASSIGN_OR_RETURN(ConvDims d, ResolveConvDims(attrs, dims, ranges[i].dims()));
      try {
        chunk.conv =
            MakeNhwcConv(dims, d, ranges[i], src_type, memory::data_type::s8, memory::data_type::s32, base_attr());
      } catch (const dnnl::error& e) {
        return absl::UnimplementedError(absl::StrCat("oneDNN refuses a channel range: ", e.what()));
      }
    }
    ChunkSetCount().fetch_add(1);
    return chunks;
  }
  return absl::UnimplementedError(absl::StrCat("no split into up to ", kMaxChannelChunks,
                                               " channel ranges keeps the int32 sums within 2^24"));
}

int64_t ChannelChunkSets() { return ChunkSetCount().load(); }

absl::Status RunChannelChunks(const std::vector<ChannelChunk>& chunks, const uint8_t* src, int64_t channels,
                              int64_t pixels, int32_t zero_point, int32_t* acc, int64_t out_elements) {
  thread_local std::vector<uint8_t> range_src;
  thread_local std::vector<int32_t> range_acc;
  int32_t zp = zero_point;
  memory zp_mem({{1}, memory::data_type::s32, memory::format_tag::x}, Engine(), &zp);
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ChannelChunk& chunk = chunks[i];
    const int64_t width = chunk.end - chunk.begin;
    GrowTo(range_src, pixels * width);
    uint8_t* gathered = range_src.data();  // the calling thread's buffer, also in the workers
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pixels; ++p) {
      std::memcpy(gathered + p * width, src + p * channels + chunk.begin, static_cast<size_t>(width));
    }
    int32_t* out = acc;
    if (i > 0) {
      GrowTo(range_acc, out_elements);
      out = range_acc.data();
    }
    memory src_mem(chunk.conv.src_desc, Engine(), gathered);
    memory dst_mem(chunk.conv.dst_desc, Engine(), out);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, chunk.conv.weights}, {DNNL_ARG_DST, dst_mem}};
    if (zp != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem);
    AddThreadScratchpad(chunk.conv, &args);
    try {
      chunk.conv.conv.execute(Stream(), args);
      Stream().wait();
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat("oneDNN convolution of a channel range failed: ", e.what()));
    }
    if (i > 0) {
#pragma omp parallel for schedule(static)
      for (int64_t e = 0; e < out_elements; ++e) acc[e] += out[e];
    }
  }
  return absl::OkStatus();
}

}  // namespace qfuse::runtime::onednn
