// Conv and ConvTranspose, float32, 1-3 spatial dims. Conv runs the path its plan chose when
// the kernel was prepared (conv_plan.h: depthwise, implicit GEMM, im2col + GEMM), one function
// each; ConvTranspose is GEMM + col2im.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/linalg/avx512_sgemm.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/kernels/linalg/conv_geometry.h"
#include "runtime/kernels/linalg/conv_plan.h"
#include "runtime/kernels/linalg/depthwise.h"
#include "runtime/kernels/linalg/eigen_gemm.h"
#include "runtime/kernels/linalg/im2col.h"
#include "runtime/kernels/linalg/implicit_conv.h"
#include "runtime/kernels/linalg/linalg.h"
#include "runtime/kernels/linalg/parallel_gemm.h"

namespace qfuse::runtime::kernels {
namespace {

using linalg::ConvAttrs;
using linalg::ConvBuffers;
using linalg::ConvGeometry;
using linalg::ConvPath;
using linalg::ConvPlan;

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

// The im2col + GEMM path, each (image, group) GEMM out[cout_g, out_size] = W_g[cout_g, k] *
// col[k, out_size] split into blocks of whole output rows whose column matrix (k x block)
// stays in L2, so im2col, the bias fill and the GEMM work on cached data; the blocks run
// across the pool. A pointwise conv multiplies the image itself.
void Im2ColRowBlocks(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& b, int64_t rows_per_block) {
  const ConvGeometry& g = plan.geometry;
  const int64_t cin = plan.in_channels, cout = plan.out_channels, group = plan.group;
  const int64_t cin_g = cin / group, cout_g = cout / group, k = cin_g * g.kernel_size();
  const int64_t in_size = g.image_size(), out_size = g.col_size();
  const int64_t out_rows = g.col[0] * g.col[1], row_len = g.col[2];
  const int64_t blocks = (out_rows + rows_per_block - 1) / rows_per_block;
  const bool pointwise = g.IsPointwise();
  const bool avx512 = plan.isa >= Isa::kAvx512;
  pool.ParallelFor(b.batch * group * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> col;
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t item = unit / blocks, block = unit % blocks;
      const int64_t n = item / group, gi = item % group;
      const float* image = b.x + (n * cin + gi * cin_g) * in_size;
      const int64_t r0 = block * rows_per_block, r1 = std::min(out_rows, r0 + rows_per_block);
      const int64_t c0 = r0 * row_len, cols = (r1 - r0) * row_len;
      const float* columns = image + c0;
      int64_t ldb = out_size;
      if (!pointwise) {
        col.resize(k * cols);
        linalg::Im2ColRows(g, cin_g, image, r0, r1, col.data());
        columns = col.data();
        ldb = cols;
      }
      float* out = b.y + (n * cout + gi * cout_g) * out_size + c0;
      const float* w = b.w + gi * cout_g * k;
      const float* bias = b.bias ? b.bias + gi * cout_g : nullptr;
      if (avx512) {  // bias added in the GEMM's store, C never read
        linalg::Avx512SgemmRowBias(cout_g, cols, k, w, k, columns, ldb, bias, out, out_size);
        continue;
      }
      if (bias) {
        for (int64_t oc = 0; oc < cout_g; ++oc) std::fill(out + oc * out_size, out + oc * out_size + cols, bias[oc]);
      }
      linalg::Gemm(false, false, cout_g, cols, k, 1.0f, w, k, columns, ldb, bias ? 1.0f : 0.0f, out, out_size);
    }
  });
}

// The im2col + GEMM path with too few row blocks to occupy the pool: one GEMM per whole
// (image, group), each split across the pool.
void Im2ColWholeImages(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& b) {
  const ConvGeometry& g = plan.geometry;
  const int64_t cin = plan.in_channels, cout = plan.out_channels, group = plan.group;
  const int64_t cin_g = cin / group, cout_g = cout / group, k = cin_g * g.kernel_size();
  const int64_t in_size = g.image_size(), out_size = g.col_size();
  const bool pointwise = g.IsPointwise();
  auto run_item = [&](int64_t item, std::vector<float>& col, const ThreadPool* gemm_pool) {
    const int64_t n = item / group, gi = item % group;
    const float* image = b.x + (n * cin + gi * cin_g) * in_size;
    const float* columns = image;
    if (!pointwise) {
      col.resize(k * out_size);
      linalg::Im2Col(g, cin_g, image, col.data());
      columns = col.data();
    }
    float* out = b.y + (n * cout + gi * cout_g) * out_size;
    if (b.bias) FillBias(b.bias + gi * cout_g, cout_g, out_size, out);
    linalg::ParallelGemm(gemm_pool, false, false, cout_g, out_size, k, 1.0f, b.w + gi * cout_g * k, k, columns,
                         out_size, b.bias ? 1.0f : 0.0f, out, out_size);
  };
  ForEachGemmItem(pool, b.batch * group, run_item);
}

// The im2col + GEMM path: row blocks across the pool when there are enough of them (or
// enough images), else whole images with the pool inside each GEMM.
void RunIm2ColGemmConv(const ConvPlan& plan, const ThreadPool& pool, const ConvBuffers& b) {
  const ConvGeometry& g = plan.geometry;
  const int64_t k = plan.in_channels / plan.group * g.kernel_size();
  const int64_t out_rows = g.col[0] * g.col[1], row_len = g.col[2];
  const int64_t rows_per_block =
      std::min(out_rows, std::max<int64_t>(1, linalg::kColBlockFloats / std::max<int64_t>(1, k * row_len)));
  const int64_t blocks = (out_rows + rows_per_block - 1) / rows_per_block;
  const int64_t items = b.batch * plan.group;
  const int threads = pool.num_threads();
  if (items >= threads || items * blocks >= 2 * threads) {
    Im2ColRowBlocks(plan, pool, b, rows_per_block);
  } else {
    Im2ColWholeImages(plan, pool, b);
  }
}

// The plan of the kernel's node when its input and weight shapes are known before the first
// run (all dims but the batch), else nullopt: planned at the first run instead.
std::optional<ConvPlan> PlanFromNode(const ConvAttrs& attrs, const ir::Node& node) {
  if (node.inputs().size() < 2 || node.input(0) == nullptr || node.input(1) == nullptr) return std::nullopt;
  const ir::Shape& xs = node.input(0)->type().shape;
  const ir::Shape& ws = node.input(1)->type().shape;
  if (!xs.rank_known || !ws.rank_known || xs.dims.empty()) return std::nullopt;
  std::vector<int64_t> x_dims = {1}, w_dims;  // any batch
  for (size_t i = 1; i < xs.dims.size(); ++i) {
    if (!xs.dims[i].is_known()) return std::nullopt;
    x_dims.push_back(xs.dims[i].value);
  }
  for (const ir::Dim& d : ws.dims) {
    if (!d.is_known()) return std::nullopt;
    w_dims.push_back(d.value);
  }
  absl::StatusOr<ConvPlan> plan = linalg::PlanConv(attrs, x_dims, w_dims);
  if (!plan.ok()) return std::nullopt;  // the run reports it with the actual shapes
  return *std::move(plan);
}

class ConvKernel : public Kernel {
 public:
  ConvKernel(ConvAttrs attrs, std::optional<ConvPlan> plan) : attrs_(std::move(attrs)) {
    if (plan.has_value()) plans_.push_back(std::make_shared<const ConvPlan>(*std::move(plan)));
  }

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    QFUSE_RETURN_IF_ERROR(CheckFloat(x, "input"));
    QFUSE_RETURN_IF_ERROR(CheckFloat(w, "weights"));
    QFUSE_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPlan> plan, PlanFor(x.dims(), w.dims()));
    QFUSE_ASSIGN_OR_RETURN(const float* bias, BiasData(inputs, plan->out_channels));
    const int64_t batch = x.dims()[0];
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, linalg::ConvOutputDims(
                                                                              batch, plan->out_channels,
                                                                              plan->geometry, /*image_side=*/false)));
    if (outputs[0].num_elements() == 0) return absl::OkStatus();
    const ConvBuffers buffers{batch, x.data<float>(), w.data<float>(), bias, outputs[0].data<float>()};
    switch (plan->path) {
      case ConvPath::kDepthwise: linalg::RunDepthwiseConv(*plan, *ctx.pool, buffers); break;
      case ConvPath::kImplicitGemm: linalg::RunImplicitGemmConv(*plan, *ctx.pool, buffers); break;
      case ConvPath::kIm2ColGemm: RunIm2ColGemmConv(*plan, *ctx.pool, buffers); break;
    }
    return absl::OkStatus();
  }

 private:
  // Plans kept for a few shapes (and ISA caps); the oldest goes first.
  static constexpr size_t kMaxPlans = 8;

  absl::StatusOr<std::shared_ptr<const ConvPlan>> PlanFor(absl::Span<const int64_t> x_dims,
                                                          absl::Span<const int64_t> w_dims) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::shared_ptr<const ConvPlan>& plan : plans_) {
      if (plan->Fits(x_dims, w_dims)) return plan;
    }
    QFUSE_ASSIGN_OR_RETURN(ConvPlan plan, linalg::PlanConv(attrs_, x_dims, w_dims));
    if (plans_.size() == kMaxPlans) plans_.erase(plans_.begin());
    plans_.push_back(std::make_shared<const ConvPlan>(std::move(plan)));
    return plans_.back();
  }

  const ConvAttrs attrs_;
  std::mutex mu_;
  std::vector<std::shared_ptr<const ConvPlan>> plans_;
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
  std::optional<ConvPlan> plan = PlanFromNode(attrs, node);
  return std::make_unique<ConvKernel>(std::move(attrs), std::move(plan));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateConvTransposeKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(ConvAttrs attrs, linalg::ParseConvAttrs(node, /*transpose=*/true));
  return std::make_unique<ConvTransposeKernel>(std::move(attrs));
}

}  // namespace qfuse::runtime::kernels
