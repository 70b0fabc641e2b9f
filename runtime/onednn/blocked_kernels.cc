#include "runtime/onednn/blocked_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"
#include "runtime/int8/int8_ops.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/shape/shape_ops.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {
namespace {

// Bytes per parallel chunk of the affine's rows.
constexpr int64_t kChunkBytes = 64 * 1024;
// Values per scale / shift pattern: a multiple of every block size (8, 16) and vector width.
constexpr int64_t kPattern = 16;

// x * s + b rounded twice (this library is built with -ffp-contract=off: no fused
// multiply-add), then Relu as the Relu kernel writes it (v > 0 ? v : 0).
inline float Affine(float x, float s, float b, bool relu) {
  const float v = x * s + b;
  return relu ? (v > 0.f ? v : 0.f) : v;
}

// Affine on whole vectors of 16 (AVX-512) or 2 x 8 (AVX2) values against the kPattern-value
// s and b; returns how many values it did. max(v, +0) is v > 0 ? v : 0 for every v: it returns
// its second operand for a NaN and for either zero.
template <bool kRelu>
__attribute__((target("avx512f"))) int64_t AffineAvx512(const float* x, const float* s, const float* b, int64_t n,
                                                        float* y) {
  const __m512 scale = _mm512_load_ps(s), shift = _mm512_load_ps(b), zero = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), scale), shift);
    if (kRelu) v = _mm512_max_ps(v, zero);
    _mm512_storeu_ps(y + i, v);
  }
  return i;
}
template <bool kRelu>
__attribute__((target("avx2"))) int64_t AffineAvx2(const float* x, const float* s, const float* b, int64_t n,
                                                   float* y) {
  const __m256 scale[2] = {_mm256_load_ps(s), _mm256_load_ps(s + 8)};
  const __m256 shift[2] = {_mm256_load_ps(b), _mm256_load_ps(b + 8)};
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int h = 0; h < 2; ++h) {
      __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * h), scale[h]), shift[h]);
      if (kRelu) v = _mm256_max_ps(v, zero);
      _mm256_storeu_ps(y + i + 8 * h, v);
    }
  }
  return i;
}

class BlockedConcatKernel : public Kernel {
 public:
  BlockedConcatKernel(int64_t axis, std::unique_ptr<Kernel> plain)
      : axis_(axis), plain_(std::move(plain)), blocks_(kernels::MakeConcatKernel(1)) {}

  // Blocked when every input is blocked with channels that fill whole blocks, on the channel
  // axis of a 4-D tensor (1, or -3).
  std::optional<TensorLayout> layout_for_inputs(absl::Span<const TensorLayout> inputs) const override {
    if ((axis_ != 1 && axis_ != -3) || inputs.empty()) return std::nullopt;
    const int64_t block = BlockSize();
    int64_t channels = 0;
    for (const TensorLayout& l : inputs) {
      if (l.kind != LayoutKind::kChannelBlocked || l.channels % block != 0) return std::nullopt;
      channels += l.channels;
    }
    return TensorLayout{LayoutKind::kChannelBlocked, channels};
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    if (inputs.empty() || InputKind(ctx, 0) != LayoutKind::kChannelBlocked) return plain_->Run(ctx, inputs, outputs);
    // [N, C/B, H, W, B] tensors of one B, each C a multiple of B: concatenated along axis 1
    // they are the blocked form of the channels' concatenation.
    const int64_t block = inputs[0]->rank() == 5 ? inputs[0]->dims()[4] : 0;
    bool whole_blocks = block > 0;
    for (size_t i = 0; whole_blocks && i < inputs.size(); ++i) {
      const Tensor* t = inputs[i];
      whole_blocks = t != nullptr && t->rank() == 5 && t->dims()[4] == block &&
                     ctx.input_layouts[i].kind == LayoutKind::kChannelBlocked &&
                     ctx.input_layouts[i].channels == t->dims()[1] * block;
    }
    if (whole_blocks) return blocks_->Run(ctx, inputs, outputs);
    return RunNativeInLayout(*plain_, ctx, inputs, LayoutKind::kChannelBlocked, BlockSize(), outputs);
  }

 private:
  const int64_t axis_;
  const std::unique_ptr<Kernel> plain_;
  const std::unique_ptr<Kernel> blocks_;  // along axis 1 of the 5-D blocked tensors
};

class ChannelAffineKernel : public Kernel {
 public:
  ChannelAffineKernel(std::vector<float> scale, std::vector<float> shift, bool relu)
      : scale_(std::move(scale)), shift_(std::move(shift)), relu_(relu) {}

  std::optional<TensorLayout> layout_for_inputs(absl::Span<const TensorLayout> inputs) const override {
    if (inputs.empty() || inputs[0].kind != LayoutKind::kChannelBlocked ||
        inputs[0].channels != static_cast<int64_t>(scale_.size())) {
      return std::nullopt;
    }
    return inputs[0];
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(kernels::RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const int64_t channels = static_cast<int64_t>(scale_.size());
    if (x.dtype() != ir::DataType::kFloat32) {
      return absl::InvalidArgumentError(absl::StrCat("x has type ", ir::DataTypeName(x.dtype()), ", not FLOAT"));
    }
    const bool blocked = InputKind(ctx, 0) == LayoutKind::kChannelBlocked;
    // Rows of `lanes` consecutive values that share one channel (plain: a row per channel of
    // each image), or of one block's B channels (blocked: B lanes per pixel).
    int64_t rows = 0, row_size = 0, lanes = 1;
    if (blocked) {
      if (x.rank() != 5 || ctx.input_layouts[0].channels != channels) {
        return absl::InvalidArgumentError(
            absl::StrCat("blocked x ", ir::DimsToString(x.dims()), " does not hold ", channels, " channels"));
      }
      lanes = x.dims()[4];
      if (kPattern % lanes != 0) {
        return absl::InvalidArgumentError(absl::StrCat("blocks of ", lanes, " channels do not divide ", kPattern));
      }
      rows = x.dims()[0] * x.dims()[1];
      row_size = x.dims()[2] * x.dims()[3] * lanes;
    } else {
      if (x.rank() < 2 || x.dims()[1] != channels) {
        return absl::InvalidArgumentError(
            absl::StrCat("x ", ir::DimsToString(x.dims()), " does not have ", channels, " channels on axis 1"));
      }
      rows = x.dims()[0] * channels;
      row_size = rows == 0 ? 0 : x.num_elements() / rows;
    }
    QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::CreateUninitialized(ir::DataType::kFloat32, x.dims()));  // all written
    const float* in = x.data<float>();
    float* out = y.data<float>();
    const int64_t row_blocks = blocked ? x.dims()[1] : channels;
    const int64_t rows_per_chunk = std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, row_size * 4));
    ctx.pool->ParallelFor(rows, rows_per_chunk, [&](int64_t begin, int64_t end) {
      // The row's scale and shift as a pattern of kPattern values repeated along it: lane l of
      // block (r % row_blocks), or channel r % C for every value of a plain row.
      alignas(64) float s[kPattern], b[kPattern];
      for (int64_t r = begin; r < end; ++r) {
        const int64_t c0 = (r % row_blocks) * lanes;
        for (int64_t i = 0; i < kPattern; ++i) {
          const int64_t c = c0 + i % lanes;
          // Channels past C (a partial last block) hold zeros and keep them: 0 * 0 + 0.
          s[i] = c < channels ? scale_[c] : 0.f;
          b[i] = c < channels ? shift_[c] : 0.f;
        }
        Row(in + r * row_size, s, b, row_size, out + r * row_size);
      }
    });
    outputs[0] = std::move(y);
    return absl::OkStatus();
  }

 private:
  // y[i] = Affine(x[i], s[i % kPattern], b[i % kPattern]): whole vectors, then the rest.
  void Row(const float* x, const float* s, const float* b, int64_t n, float* y) const {
    int64_t i = 0;
    if (IsaAllowed(Isa::kAvx512)) {
      i = relu_ ? AffineAvx512<true>(x, s, b, n, y) : AffineAvx512<false>(x, s, b, n, y);
    } else if (IsaAllowed(Isa::kAvx2)) {
      i = relu_ ? AffineAvx2<true>(x, s, b, n, y) : AffineAvx2<false>(x, s, b, n, y);
    }
    for (; i < n; ++i) y[i] = Affine(x[i], s[i % kPattern], b[i % kPattern], relu_);
  }

  const std::vector<float> scale_;
  const std::vector<float> shift_;
  const bool relu_;
};

// The values of constant input `index` of `node`: FLOAT, `count` of them.
absl::StatusOr<std::vector<float>> ChannelConstant(const ir::Node& node, int index, int64_t count) {
  const ir::Value* v = node.inputs().size() > static_cast<size_t>(index) ? node.input(index) : nullptr;
  if (v == nullptr || v->initializer() == nullptr || v->initializer()->dtype() != ir::DataType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("input ", index, " must be a FLOAT constant"));
  }
  const ir::Tensor& t = *v->initializer();
  if (count >= 0 && t.num_elements() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", index, " has ", t.num_elements(), " values, expected ", count));
  }
  auto values = t.values<float>();
  return std::vector<float>(values.begin(), values.end());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateConcatKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> plain, kernels::CreateConcatKernel(node));
  if (!UseOneDnn()) return plain;  // no blocked tensors without oneDNN's convolutions
  QFUSE_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  return std::unique_ptr<Kernel>(new BlockedConcatKernel(axis, std::move(plain)));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateChannelAffineKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(std::vector<float> scale, ChannelConstant(node, 1, -1));
  QFUSE_ASSIGN_OR_RETURN(std::vector<float> shift, ChannelConstant(node, 2, static_cast<int64_t>(scale.size())));
  QFUSE_ASSIGN_OR_RETURN(int64_t relu, node.attrs().GetInt(int8::kChannelAffineReluAttr, 0));
  return std::unique_ptr<Kernel>(new ChannelAffineKernel(std::move(scale), std::move(shift), relu != 0));
}

}  // namespace qfuse::runtime::onednn
