// Conv (im2col + GEMM, direct loop for depthwise) and ConvTranspose (GEMM + col2im),
// float32, 1-3 spatial dims.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/kernels/linalg/parallel_gemm.h"

namespace qfuse::runtime::kernels {
namespace {

using linalg::ConvAttrs;
using linalg::ConvGeometry;

absl::Status CheckFloat(const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kFloat32) {
    return absl::UnimplementedError(absl::StrCat(what, " has type ", ir::DataTypeName(t.dtype()),
                                                 "; only FLOAT is supported"));
  }
  return absl::OkStatus();
}

// Checks the input (inputs[0]) and weights (inputs[1]) are FLOAT of the same rank >= 3.
absl::Status CheckInputAndWeights(absl::Span<const Tensor* const> inputs) {
  QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
  const Tensor& x = *inputs[0];
  const Tensor& w = *inputs[1];
  QFUSE_RETURN_IF_ERROR(CheckFloat(x, "input"));
  QFUSE_RETURN_IF_ERROR(CheckFloat(w, "weights"));
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x.dims()), " and weights ",
                                                   ir::DimsToString(w.dims()), " must have the same rank >= 3"));
  }
  return absl::OkStatus();
}

// Checks the optional bias (inputs[2]) has `channels` elements; returns its data or null.
absl::StatusOr<const float*> BiasData(absl::Span<const Tensor* const> inputs, int64_t channels) {
  if (inputs.size() < 3 || inputs[2] == nullptr) return nullptr;
  const Tensor& b = *inputs[2];
  QFUSE_RETURN_IF_ERROR(CheckFloat(b, "bias"));
  if (b.rank() != 1 || b.dims()[0] != channels) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias has shape ", ir::DimsToString(b.dims()), ", expected [", channels, "]"));
  }
  return b.data<float>();
}

// Sets `channels` planes of `size` floats to the bias (or zero).
void FillBias(const float* bias, int64_t channels, int64_t size, float* out) {
  for (int64_t c = 0; c < channels; ++c) std::fill(out + c * size, out + (c + 1) * size, bias ? bias[c] : 0.0f);
}

// Runs run_item(item, col, gemm_pool) for item in [0, items), with `col` a scratch
// buffer reused across items: items in parallel when there are enough to occupy the
// pool (each GEMM then single-threaded, gemm_pool null), else one after the other with
// the pool handed to each GEMM.
template <typename RunItem>
void ForEachGemmItem(const ThreadPool& pool, int64_t items, const RunItem& run_item) {
  if (items >= pool.num_threads()) {
    pool.ParallelFor(items, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> col;
      for (int64_t item = begin; item < end; ++item) run_item(item, col, nullptr);
    });
  } else {
    std::vector<float> col;
    for (int64_t item = 0; item < items; ++item) run_item(item, col, &pool);
  }
}

// Target size (floats) of one block of the im2col matrix: 128 KiB, well inside L2.
constexpr int64_t kColBlockFloats = 32 * 1024;

// 2-D (or 1-D) convolution with unit stride, computed without an im2col matrix:
// output rows [r0, r1) of one (image, group). The input rows they read are copied into
// a zero-padded buffer `padded` of width wp = wo + (kw - 1) * dilation; every im2col
// row (c, kh, kw) is then that buffer shifted by c * plane + kh * dh * wp + kw * dw,
// which the row-table GEMM reads in place, producing wp-wide output rows in `tmp` whose
// last wp - wo columns are discarded when copying out (with the bias).
#define QFUSE_AVX512_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))

// Lanes [0, n) of a 16-lane mask (n clamped to [0, 16]).
inline __mmask16 LowLanes(int64_t n) {
  return static_cast<__mmask16>(n <= 0 ? 0u : (n >= 16 ? 0xFFFFu : (1u << n) - 1u));
}

QFUSE_AVX512_TARGET void ImplicitConvRows(const ConvGeometry& g, int64_t cin_g, int64_t cout_g, const float* image,
                                          const float* w, const float* bias, int64_t r0, int64_t r1, float* out,
                                          std::vector<float>& padded, std::vector<int64_t>& offsets,
                                          std::vector<float>& tmp) {
  const int64_t h = g.image[1], wi = g.image[2], wo = g.col[2];
  const int64_t kh = g.kernel[1], kw = g.kernel[2], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t wp = wo + (kw - 1) * dw;
  const int64_t rows = r1 - r0, hl = rows + (kh - 1) * dh;
  const int64_t plane = hl * wp;
  const int64_t pad_top = g.pad_begin[1], pad_left = g.pad_begin[2];
  padded.resize(cin_g * plane + (kw - 1) * dw + 1);
  // Columns px of the padded row map to input x = px - pad_left, valid in [x_lo, x_hi).
  const int64_t x_lo = std::min(wp, std::max<int64_t>(0, pad_left));
  const int64_t x_hi = std::max(x_lo, std::min(wp, wi + pad_left));
  for (int64_t c = 0; c < cin_g; ++c) {
    const float* chan = image + c * h * wi;
    for (int64_t py = 0; py < hl; ++py) {
      float* dst = padded.data() + c * plane + py * wp;
      const int64_t iy = r0 + py - pad_top;
      if (iy < 0 || iy >= h) {
        std::fill(dst, dst + wp, 0.0f);
        continue;
      }
      // dst[px] = src[px - pad_left] in [x_lo, x_hi), 0 elsewhere; masked-off lanes are not read.
      const uintptr_t src = reinterpret_cast<uintptr_t>(chan + iy * wi);
      for (int64_t px = 0; px < wp; px += 16) {
        const __mmask16 load = LowLanes(x_hi - px) & static_cast<__mmask16>(~LowLanes(x_lo - px));
        const __m512 v = _mm512_maskz_loadu_ps(
            load, reinterpret_cast<const float*>(src + sizeof(float) * (px - pad_left)));
        _mm512_mask_storeu_ps(dst + px, LowLanes(wp - px), v);
      }
    }
  }
  std::fill(padded.begin() + cin_g * plane, padded.end(), 0.0f);
  offsets.resize(cin_g * kh * kw);
  int64_t* off = offsets.data();
  for (int64_t c = 0; c < cin_g; ++c) {
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) *off++ = c * plane + i * dh * wp + j * dw;
    }
  }
  const int64_t n = rows * wp;
  tmp.resize(cout_g * n);
  linalg::Avx512SgemmRowTable(cout_g, n, cin_g * kh * kw, w, cin_g * kh * kw, padded.data(), offsets.data(),
                              tmp.data(), n);
  const int64_t out_size = g.col_size();
  for (int64_t oc = 0; oc < cout_g; ++oc) {
    const __m512 b = _mm512_set1_ps(bias ? bias[oc] : 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* src = tmp.data() + oc * n + r * wp;
      float* dst = out + oc * out_size + (r0 + r) * wo;
      for (int64_t x = 0; x < wo; x += 16) {
        const __mmask16 mask = LowLanes(wo - x);
        _mm512_mask_storeu_ps(dst + x, mask, _mm512_add_ps(_mm512_maskz_loadu_ps(mask, src + x), b));
      }
    }
  }
}

bool UseImplicitConv(const ConvGeometry& g) {
  return linalg::Avx512SgemmAvailable() && !g.IsPointwise() && g.image[0] == 1 && g.col[0] == 1 &&
         g.kernel[0] == 1 && g.stride[1] == 1 && g.stride[2] == 1;
}

class ConvKernel : public Kernel {
 public:
  explicit ConvKernel(ConvAttrs attrs) : attrs_(std::move(attrs)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(CheckInputAndWeights(inputs));
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    const int64_t batch = x.dims()[0], cin = x.dims()[1], cout = w.dims()[0];
    const int64_t group = attrs_.group;
    if (cin != w.dims()[1] * group || cout % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x.dims()), ", weights ",
                                                     ir::DimsToString(w.dims()), " and group ", group,
                                                     " do not agree"));
    }
    QFUSE_ASSIGN_OR_RETURN(const float* bias, BiasData(inputs, cout));
    QFUSE_ASSIGN_OR_RETURN(
        ConvGeometry g, linalg::ResolveConv(attrs_, absl::MakeConstSpan(x.dims()).subspan(2),
                                            absl::MakeConstSpan(w.dims()).subspan(2)));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, linalg::ConvOutputDims(batch, cout, g, /*image_side=*/false)));
    float* y = outputs[0].data<float>();
    if (outputs[0].num_elements() == 0) return absl::OkStatus();
    const float* xd = x.data<float>();
    const float* wd = w.data<float>();
    const int64_t in_size = g.image_size(), out_size = g.col_size(), taps = g.kernel_size();

    if (group == cin && w.dims()[1] == 1) {  // depthwise, channel multiplier cout / cin
      const int64_t mult = cout / cin;
      ctx.pool->ParallelFor(batch * cout, 4, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t n = item / cout, oc = item % cout;
          linalg::DepthwiseChannel(g, xd + (n * cin + oc / mult) * in_size, wd + oc * taps, bias ? bias[oc] : 0.0f,
                                   y + item * out_size);
        }
      });
      return absl::OkStatus();
    }

    const int64_t cin_g = cin / group, cout_g = cout / group;
    const int64_t k = cin_g * taps;
    const bool pointwise = g.IsPointwise();
    const int64_t items = batch * group;
    // Each (image, group) GEMM out[cout_g, out_size] = W_g[cout_g, k] * col[k, out_size]
    // is split into blocks of whole output rows whose column matrix (k x block) stays
    // in L2, so im2col, the bias fill and the GEMM work on cached data.
    const int64_t out_rows = g.col[0] * g.col[1], row_len = g.col[2];
    const int64_t rows_per_block =
        std::min(out_rows, std::max<int64_t>(1, kColBlockFloats / std::max<int64_t>(1, k * row_len)));
    const int64_t blocks = (out_rows + rows_per_block - 1) / rows_per_block;
    const int threads = ctx.pool->num_threads();
    if (UseImplicitConv(g)) {
      const int64_t wp = g.col[2] + (g.kernel[2] - 1) * g.dilation[2];
      int64_t rows = std::max<int64_t>(1, kColBlockFloats / ((cin_g + cout_g) * wp));
      if (items < threads) rows = std::min(rows, (out_rows + threads - 1) / threads);  // split images across the pool
      rows = std::min(rows, out_rows);
      const int64_t row_blocks = (out_rows + rows - 1) / rows;
      ctx.pool->ParallelFor(items * row_blocks, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> padded, tmp;
        std::vector<int64_t> offsets;
        for (int64_t unit = begin; unit < end; ++unit) {
          const int64_t item = unit / row_blocks, block = unit % row_blocks;
          const int64_t n = item / group, gi = item % group;
          const int64_t r0 = block * rows, r1 = std::min(out_rows, r0 + rows);
          ImplicitConvRows(g, cin_g, cout_g, xd + (n * cin + gi * cin_g) * in_size, wd + gi * cout_g * k,
                           bias ? bias + gi * cout_g : nullptr, r0, r1, y + (n * cout + gi * cout_g) * out_size,
                           padded, offsets, tmp);
        }
      });
      return absl::OkStatus();
    }
    if (items >= threads || items * blocks >= 2 * threads) {
      ctx.pool->ParallelFor(items * blocks, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> col;
        for (int64_t unit = begin; unit < end; ++unit) {
          const int64_t item = unit / blocks, block = unit % blocks;
          const int64_t n = item / group, gi = item % group;
          const float* image = xd + (n * cin + gi * cin_g) * in_size;
          const int64_t r0 = block * rows_per_block, r1 = std::min(out_rows, r0 + rows_per_block);
          const int64_t c0 = r0 * row_len, cols = (r1 - r0) * row_len;
          const float* b = image + c0;
          int64_t ldb = out_size;
          if (!pointwise) {
            col.resize(k * cols);
            linalg::Im2ColRows(g, cin_g, image, r0, r1, col.data());
            b = col.data();
            ldb = cols;
          }
          float* out = y + (n * cout + gi * cout_g) * out_size + c0;
          if (linalg::Avx512SgemmAvailable()) {  // bias added in the GEMM's store, C never read
            linalg::Avx512SgemmRowBias(cout_g, cols, k, wd + gi * cout_g * k, k, b, ldb,
                                       bias ? bias + gi * cout_g : nullptr, out, out_size);
            continue;
          }
          if (bias) {
            for (int64_t oc = 0; oc < cout_g; ++oc) {
              std::fill(out + oc * out_size, out + oc * out_size + cols, bias[gi * cout_g + oc]);
            }
          }
          linalg::Gemm(false, false, cout_g, cols, k, 1.0f, wd + gi * cout_g * k, k, b, ldb, bias ? 1.0f : 0.0f,
                       out, out_size);
        }
      });
      return absl::OkStatus();
    }
    // Too few blocks to occupy the pool: whole-image GEMMs, each split across the pool.
    auto run_item = [&](int64_t item, std::vector<float>& col, const ThreadPool* gemm_pool) {
      const int64_t n = item / group, gi = item % group;
      const float* image = xd + (n * cin + gi * cin_g) * in_size;
      const float* b = image;
      if (!pointwise) {
        col.resize(k * out_size);
        linalg::Im2Col(g, cin_g, image, col.data());
        b = col.data();
      }
      float* out = y + (n * cout + gi * cout_g) * out_size;
      if (bias) FillBias(bias + gi * cout_g, cout_g, out_size, out);
      linalg::ParallelGemm(gemm_pool, false, false, cout_g, out_size, k, 1.0f, wd + gi * cout_g * k, k, b, out_size,
                           bias ? 1.0f : 0.0f, out, out_size);
    };
    ForEachGemmItem(*ctx.pool, batch * group, run_item);
    return absl::OkStatus();
  }

 private:
  const ConvAttrs attrs_;
};

class ConvTransposeKernel : public Kernel {
 public:
  explicit ConvTransposeKernel(ConvAttrs attrs) : attrs_(std::move(attrs)) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(CheckInputAndWeights(inputs));
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    const int64_t batch = x.dims()[0], cin = x.dims()[1], group = attrs_.group;
    if (w.dims()[0] != cin || cin % group != 0) {
      return absl::InvalidArgumentError(absl::StrCat("input ", ir::DimsToString(x.dims()), ", weights ",
                                                     ir::DimsToString(w.dims()), " and group ", group,
                                                     " do not agree (weights are [Cin, Cout/group, k...])"));
    }
    const int64_t cin_g = cin / group, cout_g = w.dims()[1], cout = cout_g * group;
    QFUSE_ASSIGN_OR_RETURN(const float* bias, BiasData(inputs, cout));
    QFUSE_ASSIGN_OR_RETURN(
        ConvGeometry g, linalg::ResolveConvTranspose(attrs_, absl::MakeConstSpan(x.dims()).subspan(2),
                                                     absl::MakeConstSpan(w.dims()).subspan(2)));
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, linalg::ConvOutputDims(batch, cout, g, /*image_side=*/true)));
    float* y = outputs[0].data<float>();
    if (outputs[0].num_elements() == 0) return absl::OkStatus();
    const float* xd = x.data<float>();
    const float* wd = w.data<float>();
    const int64_t in_size = g.col_size(), out_size = g.image_size();
    const int64_t m = cout_g * g.kernel_size();
    // col[cout_g * taps, in_size] = W_g^T * X_g, then scattered into the output.
    auto run_item = [&](int64_t item, std::vector<float>& col, const ThreadPool* gemm_pool) {
      const int64_t n = item / group, gi = item % group;
      col.resize(m * in_size);
      linalg::ParallelGemm(gemm_pool, true, false, m, in_size, cin_g, 1.0f, wd + gi * cin_g * m, m,
                           xd + (n * cin + gi * cin_g) * in_size, in_size, 0.0f, col.data(), in_size);
      float* out = y + (n * cout + gi * cout_g) * out_size;
      FillBias(bias ? bias + gi * cout_g : nullptr, cout_g, out_size, out);
      linalg::Col2ImAdd(g, cout_g, col.data(), out);
    };
    ForEachGemmItem(*ctx.pool, batch * group, run_item);
    return absl::OkStatus();
  }

 private:
  const ConvAttrs attrs_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateConvKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, linalg::ParseConvAttrs(node, /*transpose=*/false));
  return std::make_unique<ConvKernel>(std::move(attrs));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateConvTransposeKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, linalg::ParseConvAttrs(node, /*transpose=*/true));
  return std::make_unique<ConvTransposeKernel>(std::move(attrs));
}

}  // namespace qfuse::runtime::kernels
