// An int8 convolution (group 1) whose int32 sums oneDNN would round through float32 above 2^24
// (int8_conv_engine.h's OneDnnInt32SumsAreExact), run as oneDNN convolutions over consecutive
// input-channel ranges, each within that bound, whose int32 outputs qfuse adds: the exact sums
// at oneDNN's speed, for one more pass over the source bytes and the accumulators per range.
#ifndef QFUSE_RUNTIME_ONEDNN_CHANNEL_CHUNKS_H_
#define QFUSE_RUNTIME_ONEDNN_CHANNEL_CHUNKS_H_

#include <cstdint>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/onednn/conv_desc.h"

namespace qfuse::runtime::onednn {

// The most ranges MakeChannelChunks tries.
inline constexpr int kMaxChannelChunks = 8;

struct ChannelChunk {
  int64_t begin = 0, end = 0;  // input channels [begin, end)
  NhwcConv conv;               // on a dense channels-last source of end - begin channels; int32 output
};

// The convolutions on x_dims [N, I, H, W] (each with its range's channels; a source of
// src_type, attributes from base_attr()) of the fewest equal ranges (2 to kMaxChannelChunks) of
// the input channels of int8 weights [O, I, KH, KW] whose int32 sums stay within 2^24 whatever
// the implementation (OneDnnInt32SumsAreExact's bound); Unimplemented when no count does.
absl::StatusOr<std::vector<ChannelChunk>> MakeChannelChunks(const kernels::linalg::ConvAttrs& attrs,
                                                            const std::vector<int64_t>& x_dims,
                                                            const ir::Tensor& weights,
                                                            dnnl::memory::data_type src_type, bool source_zero_point,
                                                            const std::function<dnnl::primitive_attr()>& base_attr);

// acc = the sum of the chunks' int32 outputs (`out_elements` of them, channels-last) on the
// channels-last source `src` of `pixels` pixels of `channels` bytes (the chunks' x_dims), with
// the source zero point `zero_point` (0: the chunks were made without one). Runs on the calling
// thread's stream and scratch buffers; the gather and the additions on OpenMP's threads (serial
// inside a parallel region).
absl::Status RunChannelChunks(const std::vector<ChannelChunk>& chunks, const uint8_t* src, int64_t channels,
                              int64_t pixels, int32_t zero_point, int32_t* acc, int64_t out_elements);

// How many sets of ranges MakeChannelChunks has made in this process (tests check that the
// ranges ran).
int64_t ChannelChunkSets();

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_CHANNEL_CHUNKS_H_
