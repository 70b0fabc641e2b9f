// BatchNormalization, InstanceNormalization, LayerNormalization and LRN (FLOAT tensors).
//
// Means and variances are two-pass (mean first, then the mean squared deviation, i.e. the
// population variance) with double accumulators; per-element arithmetic is float.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn/layer_norm_row.h"
#include "runtime/kernels/nn/nn.h"
#include "runtime/kernels/nn/nn_common.h"

namespace qfuse::runtime::kernels {
namespace {

using nn_internal::MinChunk;

constexpr float kDefaultEpsilon = 1e-5f;

absl::Status RequireFloat(const Tensor& t, const std::string& what) {
  if (t.dtype() != DataType::kFloat32) {
    return absl::UnimplementedError(absl::StrCat(what, " of type ", ir::DataTypeName(t.dtype()), " (FLOAT only)"));
  }
  return absl::OkStatus();
}

// Checks that `t` is FLOAT with exactly `count` elements (a per-channel vector).
absl::Status RequirePerChannel(const Tensor& t, int64_t count, const std::string& what) {
  QFUSE_RETURN_IF_ERROR(RequireFloat(t, what));
  if (t.num_elements() != count) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of shape ", ir::DimsToString(t.dims()), " must have ", count,
                                                   " elements (one per channel)"));
  }
  return absl::OkStatus();
}

// A FLOAT input X of rank >= min_rank (at least 2) seen as [N, C, spatial], spatial
// being the product of the remaining dims.
struct ChannelView {
  int64_t n = 0;
  int64_t c = 0;
  int64_t spatial = 0;
};

absl::StatusOr<ChannelView> ViewChannels(const Tensor& x, int64_t min_rank) {
  QFUSE_RETURN_IF_ERROR(RequireFloat(x, "input X"));
  if (x.rank() < min_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("input X of shape ", ir::DimsToString(x.dims()), " must have rank >= ", min_rank));
  }
  ChannelView v;
  v.n = x.dims()[0];
  v.c = x.dims()[1];
  v.spatial = v.n * v.c > 0 ? x.num_elements() / (v.n * v.c) : 0;
  return v;
}

// Mean and population variance of n floats.
void MeanVariance(const float* x, int64_t n, double* mean, double* var) {
  const double m = n > 0 ? nn_internal::SumToDouble(x, n) / n : 0.0;
  *mean = m;
  *var = n > 0 ? nn_internal::SquaredDeviationSum(x, n, m) / n : 0.0;
}

// y = x * a + b over `n` elements.
inline void ScaleShift(const float* x, float a, float b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// ---------------------------------------------------------------- BatchNormalization

struct BatchNormParams {
  float epsilon = kDefaultEpsilon;
  float momentum = 0.9f;
  bool training_mode = false;
};

class BatchNormKernel : public Kernel {
 public:
  explicit BatchNormKernel(BatchNormParams p) : p_(p) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 5));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const ChannelView v, ViewChannels(x, 2));
    const int64_t n = v.n, c = v.c, spatial = v.spatial;
    const char* names[] = {"scale", "B", "input_mean", "input_var"};
    for (int i = 0; i < 4; ++i) QFUSE_RETURN_IF_ERROR(RequirePerChannel(*inputs[i + 1], c, names[i]));
    const float* scale = inputs[1]->data<float>();
    const float* bias = inputs[2]->data<float>();
    const float* in_mean = inputs[3]->data<float>();
    const float* in_var = inputs[4]->data<float>();

    // Per-channel y = x * a + b.
    std::vector<float> a(c), b(c);
    std::vector<double> batch_mean, batch_var;
    if (p_.training_mode) {
      batch_mean.assign(c, 0.0);
      batch_var.assign(c, 0.0);
      BatchStatistics(ctx, x, spatial, &batch_mean, &batch_var);
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      if (!p_.training_mode) {
        // onnxruntime's float32 steps (batch_norm.h): inv_std = 1 / sqrt(var + epsilon),
        // a = inv_std * scale, b = B - mean * a, so a quantized value read after a float BN
        // rounds to the same integer in both runtimes.
        const float inv_std = 1.f / std::sqrt(in_var[ch] + p_.epsilon);
        a[ch] = inv_std * scale[ch];
        b[ch] = bias[ch] - in_mean[ch] * a[ch];
        continue;
      }
      const double mean = batch_mean[ch];
      const double var = batch_var[ch];
      const double inv_std = 1.0 / std::sqrt(var + p_.epsilon);
      a[ch] = static_cast<float>(scale[ch] * inv_std);
      b[ch] = static_cast<float>(bias[ch] - mean * scale[ch] * inv_std);
    }
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, x.dims()));
    const float* xd = x.data<float>();
    float* yd = outputs[0].data<float>();
    ctx.pool->ParallelFor(n * c, MinChunk(spatial), [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t ch = nc % c;
        ScaleShift(xd + nc * spatial, a[ch], b[ch], spatial, yd + nc * spatial);
      }
    });
    // Training mode: running_mean and running_var, when requested.
    if (p_.training_mode) {
      for (size_t k = 1; k < outputs.size() && k < 3; ++k) {
        const float* running = k == 1 ? in_mean : in_var;
        const std::vector<double>& current = k == 1 ? batch_mean : batch_var;
        QFUSE_ASSIGN_OR_RETURN(outputs[k], Tensor::Create(DataType::kFloat32, {c}));
        float* out = outputs[k].data<float>();
        for (int64_t ch = 0; ch < c; ++ch) {
          out[ch] = static_cast<float>(running[ch] * p_.momentum + current[ch] * (1.0 - p_.momentum));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  // Mean and population variance per channel over the batch and spatial dims.
  static void BatchStatistics(const KernelContext& ctx, const Tensor& x, int64_t spatial, std::vector<double>* mean,
                              std::vector<double>* var) {
    const int64_t n = x.dims()[0], c = x.dims()[1];
    const float* xd = x.data<float>();
    const double count = static_cast<double>(n * spatial);
    ctx.pool->ParallelFor(c, MinChunk(n * spatial * 2), [&](int64_t begin, int64_t end) {
      for (int64_t ch = begin; ch < end; ++ch) {
        double sum = 0;
        for (int64_t b = 0; b < n; ++b) sum += nn_internal::SumToDouble(xd + (b * c + ch) * spatial, spatial);
        const double m = count > 0 ? sum / count : 0.0;
        double sq = 0;
        for (int64_t b = 0; b < n; ++b) {
          sq += nn_internal::SquaredDeviationSum(xd + (b * c + ch) * spatial, spatial, m);
        }
        (*mean)[ch] = m;
        (*var)[ch] = count > 0 ? sq / count : 0.0;
      }
    });
  }

  BatchNormParams p_;
};

// ---------------------------------------------------------------- InstanceNormalization

class InstanceNormKernel : public Kernel {
 public:
  explicit InstanceNormKernel(float epsilon) : epsilon_(epsilon) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 3));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const ChannelView v, ViewChannels(x, 3));
    const int64_t n = v.n, c = v.c, spatial = v.spatial;
    QFUSE_RETURN_IF_ERROR(RequirePerChannel(*inputs[1], c, "scale"));
    QFUSE_RETURN_IF_ERROR(RequirePerChannel(*inputs[2], c, "B"));
    const float* scale = inputs[1]->data<float>();
    const float* bias = inputs[2]->data<float>();
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, x.dims()));
    const float* xd = x.data<float>();
    float* yd = outputs[0].data<float>();
    const double epsilon = epsilon_;
    ctx.pool->ParallelFor(n * c, MinChunk(3 * spatial), [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t ch = nc % c;
        double mean, var;
        MeanVariance(xd + nc * spatial, spatial, &mean, &var);
        const double a = scale[ch] / std::sqrt(var + epsilon);
        ScaleShift(xd + nc * spatial, static_cast<float>(a), static_cast<float>(bias[ch] - mean * a), spatial,
                   yd + nc * spatial);
      }
    });
    return absl::OkStatus();
  }

 private:
  float epsilon_;
};

// ---------------------------------------------------------------- LayerNormalization

struct LayerNormParams {
  int64_t axis = -1;
  float epsilon = kDefaultEpsilon;
  // qfuse.SimplifiedLayerNormalization (onnxruntime's RMS norm): no mean, no bias, one output.
  bool simplified = false;
};

// `t` (Scale or B) laid out over the normalized shape `norm_dims`: its own data when it
// already has that many elements, else a unidirectional-broadcast copy in `storage`.
absl::StatusOr<const float*> ExpandToNormalized(const Tensor& t, const std::vector<int64_t>& norm_dims,
                                                const std::string& what, std::vector<float>* storage) {
  QFUSE_RETURN_IF_ERROR(RequireFloat(t, what));
  const int64_t count = ir::NumElements(norm_dims);
  absl::StatusOr<std::vector<int64_t>> shape = BroadcastShapes(t.dims(), norm_dims);
  if (!shape.ok() || *shape != norm_dims) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of shape ", ir::DimsToString(t.dims()),
                                                   " does not broadcast to the normalized shape ",
                                                   ir::DimsToString(norm_dims)));
  }
  if (t.num_elements() == count) return t.data<float>();
  const std::vector<int64_t> strides = BroadcastStrides(t.dims(), norm_dims);
  storage->assign(count, 0.0f);
  const float* src = t.data<float>();
  std::vector<int64_t> index(norm_dims.size(), 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < norm_dims.size(); ++d) offset += index[d] * strides[d];
    (*storage)[i] = src[offset];
    for (int64_t d = static_cast<int64_t>(norm_dims.size()) - 1; d >= 0; --d) {
      if (++index[d] < norm_dims[d]) break;
      index[d] = 0;
    }
  }
  return storage->data();
}

// A row of fewer than 16 values of the simplified form, as onnxruntime 1.30 computes it there
// (its scalar fallback; 16 and more go to the kernel of layer_norm_row.h): the squares summed
// left to right in float32, then sqrt(sum / n + epsilon), y = x / rms * scale.
constexpr int64_t kSimplifiedKernelRow = 16;

void ShortRmsRow(const float* x, const float* scale, int64_t n, float epsilon, float* y) {
  float sum = 0.f;
  for (int64_t h = 0; h < n; ++h) sum += x[h] * x[h];
  const float rms = std::sqrt(sum / static_cast<float>(n) + epsilon);
  for (int64_t h = 0; h < n; ++h) y[h] = x[h] / rms * scale[h];
}

class LayerNormKernel : public Kernel {
 public:
  explicit LayerNormKernel(LayerNormParams p) : p_(p) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 2));
    const Tensor& x = *inputs[0];
    QFUSE_RETURN_IF_ERROR(RequireFloat(x, "input X"));
    QFUSE_ASSIGN_OR_RETURN(const int64_t axis, NormalizeAxis(p_.axis, x.rank()));
    const std::vector<int64_t> norm_dims(x.dims().begin() + axis, x.dims().end());
    const int64_t cols = ir::NumElements(norm_dims);
    const int64_t rows = cols > 0 ? x.num_elements() / cols : ir::NumElements(absl::MakeSpan(x.dims()).subspan(0, axis));
    std::vector<float> scale_storage, bias_storage;
    QFUSE_ASSIGN_OR_RETURN(const float* scale, ExpandToNormalized(*inputs[1], norm_dims, "Scale", &scale_storage));
    const float* bias = nullptr;
    if (!p_.simplified && inputs.size() > 2 && inputs[2] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(bias, ExpandToNormalized(*inputs[2], norm_dims, "B", &bias_storage));
    }

    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, x.dims()));
    std::vector<int64_t> stat_dims(x.dims().begin(), x.dims().end());
    for (size_t d = axis; d < stat_dims.size(); ++d) stat_dims[d] = 1;
    float* mean_out = nullptr;
    float* inv_std_out = nullptr;
    if (outputs.size() > 1 && !p_.simplified) {
      QFUSE_ASSIGN_OR_RETURN(outputs[1], Tensor::Create(DataType::kFloat32, stat_dims));
      mean_out = outputs[1].data<float>();
    }
    if (outputs.size() > 2) {
      QFUSE_ASSIGN_OR_RETURN(outputs[2], Tensor::Create(DataType::kFloat32, stat_dims));
      inv_std_out = outputs[2].data<float>();
    }
    const float* xd = x.data<float>();
    float* yd = outputs[0].data<float>();
    // onnxruntime's arithmetic (layer_norm_row.h), so a LayerNormalization between
    // DequantizeLinear and QuantizeLinear rounds as there.
    const bool vector = IsaAllowed(Isa::kAvx2);
    ctx.pool->ParallelFor(rows, MinChunk(4 * cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (p_.simplified && cols < kSimplifiedKernelRow) {
          ShortRmsRow(xd + r * cols, scale, cols, p_.epsilon, yd + r * cols);
          continue;
        }
        const LayerNormRowStats stats =
            p_.simplified ? SimplifiedLayerNormRow(xd + r * cols, scale, cols, p_.epsilon, yd + r * cols, vector)
                          : LayerNormRow(xd + r * cols, scale, bias, cols, p_.epsilon, yd + r * cols, vector);
        if (mean_out != nullptr) mean_out[r] = stats.mean;
        if (inv_std_out != nullptr) inv_std_out[r] = stats.inv_std_dev;
      }
    });
    return absl::OkStatus();
  }

 private:
  LayerNormParams p_;
};

// ---------------------------------------------------------------- LRN

struct LrnParams {
  int64_t size = 1;
  float alpha = 1e-4f;
  float beta = 0.75f;
  float bias = 1.0f;
};

// y = x / (bias + alpha / size * sum of x^2 over channels [c - (size-1)/2, c + ceil((size-1)/2)])^beta.
class LrnKernel : public Kernel {
 public:
  explicit LrnKernel(LrnParams p) : p_(p) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    QFUSE_ASSIGN_OR_RETURN(const ChannelView v, ViewChannels(x, 2));
    const int64_t n = v.n, c = v.c, spatial = v.spatial;
    const int64_t before = (p_.size - 1) / 2;
    const int64_t after = p_.size - 1 - before;
    QFUSE_ASSIGN_OR_RETURN(outputs[0], Tensor::Create(DataType::kFloat32, x.dims()));
    const float* xd = x.data<float>();
    float* yd = outputs[0].data<float>();
    const float coeff = p_.alpha / static_cast<float>(p_.size);
    const float bias = p_.bias, beta = p_.beta;
    ctx.pool->ParallelFor(n * c, MinChunk((p_.size + 2) * spatial), [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t b = nc / c, ch = nc % c;
        float* yr = yd + nc * spatial;
        // Sum of squares accumulates in the output row, then becomes the result.
        std::fill(yr, yr + spatial, 0.0f);
        for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
          const float* xk = xd + (b * c + k) * spatial;
          for (int64_t i = 0; i < spatial; ++i) yr[i] += xk[i] * xk[i];
        }
        const float* xr = xd + nc * spatial;
        for (int64_t i = 0; i < spatial; ++i) yr[i] = xr[i] / std::pow(bias + coeff * yr[i], beta);
      }
    });
    return absl::OkStatus();
  }

 private:
  LrnParams p_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateBatchNormKernel(const ir::Node& node) {
  BatchNormParams p;
  QFUSE_ASSIGN_OR_RETURN(p.epsilon, node.attrs().GetFloat("epsilon", kDefaultEpsilon));
  QFUSE_ASSIGN_OR_RETURN(p.momentum, node.attrs().GetFloat("momentum", 0.9f));
  QFUSE_ASSIGN_OR_RETURN(int64_t training_mode, node.attrs().GetInt("training_mode", 0));
  if (training_mode != 0 && training_mode != 1) {
    return absl::InvalidArgumentError(absl::StrCat("training_mode must be 0 or 1, got ", training_mode));
  }
  p.training_mode = training_mode == 1;
  if (!p.training_mode && node.outputs().size() > 1) {
    return absl::InvalidArgumentError("running_mean / running_var outputs need training_mode = 1");
  }
  return std::unique_ptr<Kernel>(new BatchNormKernel(p));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateInstanceNormKernel(const ir::Node& node) {
  QFUSE_ASSIGN_OR_RETURN(float epsilon, node.attrs().GetFloat("epsilon", kDefaultEpsilon));
  return std::unique_ptr<Kernel>(new InstanceNormKernel(epsilon));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateLayerNormKernel(const ir::Node& node) {
  LayerNormParams p;
  QFUSE_ASSIGN_OR_RETURN(p.axis, node.attrs().GetInt("axis", -1));
  QFUSE_ASSIGN_OR_RETURN(p.epsilon, node.attrs().GetFloat("epsilon", kDefaultEpsilon));
  // stash_type only names the precision of the statistics; they are always computed in
  // double and stored as FLOAT, which covers stash_type = 1 (FLOAT).
  QFUSE_ASSIGN_OR_RETURN(int64_t stash_type, node.attrs().GetInt("stash_type", 1));
  if (stash_type != 1) return absl::UnimplementedError(absl::StrCat("LayerNormalization stash_type ", stash_type, " (only 1, FLOAT)"));
  return std::unique_ptr<Kernel>(new LayerNormKernel(p));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateSimplifiedLayerNormKernel(const ir::Node& node) {
  LayerNormParams p;
  QFUSE_ASSIGN_OR_RETURN(p.axis, node.attrs().GetInt("axis", -1));
  QFUSE_ASSIGN_OR_RETURN(p.epsilon, node.attrs().GetFloat("epsilon", kDefaultEpsilon));
  p.simplified = true;
  return std::unique_ptr<Kernel>(new LayerNormKernel(p));
}

absl::StatusOr<std::unique_ptr<Kernel>> CreateLrnKernel(const ir::Node& node) {
  LrnParams p;
  QFUSE_ASSIGN_OR_RETURN(p.size, node.attrs().GetInt("size", 0));
  if (p.size <= 0) return absl::InvalidArgumentError(absl::StrCat("LRN size must be positive, got ", p.size));
  QFUSE_ASSIGN_OR_RETURN(p.alpha, node.attrs().GetFloat("alpha", 1e-4f));
  QFUSE_ASSIGN_OR_RETURN(p.beta, node.attrs().GetFloat("beta", 0.75f));
  QFUSE_ASSIGN_OR_RETURN(p.bias, node.attrs().GetFloat("bias", 1.0f));
  return std::unique_ptr<Kernel>(new LrnKernel(p));
}

}  // namespace qfuse::runtime::kernels
