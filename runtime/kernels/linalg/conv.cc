// Conv (im2col + GEMM, direct loop for depthwise) and ConvTranspose (GEMM + col2im),
// float32, 1-3 spatial dims.
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/status_macros.h"
#include "runtime/kernels/kernel_util.h"
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

std::vector<int64_t> OutputDims(int64_t batch, int64_t channels, const ConvGeometry& g, bool image_side) {
  std::vector<int64_t> dims = {batch, channels};
  const auto& spatial = image_side ? g.image : g.col;
  for (int64_t i = linalg::kMaxSpatial - g.spatial_rank; i < linalg::kMaxSpatial; ++i) dims.push_back(spatial[i]);
  return dims;
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
    outputs[0] = Tensor(DataType::kFloat32, OutputDims(batch, cout, g, /*image_side=*/false));
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
    // One GEMM per (image, group): out[cout_g, out_size] = W_g[cout_g, k] * col[k, out_size].
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
    outputs[0] = Tensor(DataType::kFloat32, OutputDims(batch, cout, g, /*image_side=*/true));
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
