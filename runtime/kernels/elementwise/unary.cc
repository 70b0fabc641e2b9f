// Unary kernels: float activations and math (qfuse.Gelu too), Clip (any numeric type), Identity and
// Dropout (copy; training mode draws a deterministic pseudo-random mask).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/erf.h"
#include "ir/fused_unit.h"
#include "ir/logistic.h"
#include "runtime/cpu_isa.h"
#include "runtime/kernels/elementwise/broadcast.h"
#include "runtime/kernels/elementwise/dispatch.h"
#include "runtime/kernels/elementwise/elementwise.h"
#include "runtime/kernels/kernel_util.h"

namespace qfuse::runtime::kernels {
namespace {

enum class UnaryOp { kRelu, kLeakyRelu, kSigmoid, kHardSigmoid, kHardSwish, kTanh, kErf, kGelu, kExp, kSqrt };

struct UnaryParams {
  UnaryOp op = UnaryOp::kRelu;
  float alpha = 0;
  float beta = 0;
  // kGelu: the divisor of the unfused chain (0: onnxruntime's fused form) and its Mul order.
  float gelu_divisor = 0;
  bool gelu_half_first = false;
};

template <typename T, typename Fn>
void Apply(const ThreadPool& pool, const T* in, T* out, int64_t n, Fn fn) {
  ParallelElements(pool, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
  });
}

template <typename T>
void RunMath(const ThreadPool& pool, const UnaryParams& p, const T* x, T* y, int64_t n) {
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  switch (p.op) {
    case UnaryOp::kRelu: return Apply(pool, x, y, n, [](T v) { return v > T(0) ? v : T(0); });
    case UnaryOp::kLeakyRelu: return Apply(pool, x, y, n, [alpha](T v) { return v < T(0) ? alpha * v : v; });
    case UnaryOp::kSigmoid:
      if constexpr (std::is_same_v<T, float>) {  // onnxruntime's float32 logistic, ir/logistic.h
        const bool vector = IsaAllowed(Isa::kAvx2);
        return ParallelElements(pool, n,
                                [&](int64_t begin, int64_t end) { ir::LogisticRow(x + begin, y + begin, end - begin, vector); });
      }
      return Apply(pool, x, y, n, [](T v) {
        // Split by sign so exp never overflows.
        if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
        const T e = std::exp(v);
        return e / (T(1) + e);
      });
    case UnaryOp::kHardSigmoid:
      return Apply(pool, x, y, n,
                   [alpha, beta](T v) { return std::max(T(0), std::min(T(1), alpha * v + beta)); });
    case UnaryOp::kHardSwish:
      // ONNX's function body, HardSigmoid(alpha 1/6, beta 1/2) * x, as onnxruntime computes it: a
      // product with 1/6 rounded to T, then the sum (ir/fused_unit.h's kHardSwishAlpha for float).
      return Apply(pool, x, y, n, [](T v) {
        const T alpha = T(1) / T(6);
        return v * std::max(T(0), std::min(T(1), v * alpha + T(0.5)));
      });
    case UnaryOp::kTanh: return Apply(pool, x, y, n, [](T v) { return std::tanh(v); });
    case UnaryOp::kErf:
      if constexpr (std::is_same_v<T, float>) {  // onnxruntime's float32 erf, ir/erf.h
        const bool vector = IsaAllowed(Isa::kAvx2), wide = IsaAllowed(Isa::kAvx512);
        return ParallelElements(pool, n, [&](int64_t begin, int64_t end) {
          ir::ErfRow(x + begin, y + begin, end - begin, vector, wide);
        });
      }
      return Apply(pool, x, y, n, [](T v) { return std::erf(v); });
    case UnaryOp::kGelu:
      if constexpr (std::is_same_v<T, float>) {  // onnxruntime's fused Gelu, ir/erf.h
        const bool vector = IsaAllowed(Isa::kAvx2), wide = IsaAllowed(Isa::kAvx512);
        return ParallelElements(pool, n, [&](int64_t begin, int64_t end) {
          if (p.gelu_divisor == 0) {
            ir::GeluRow(x + begin, y + begin, end - begin, vector, wide);
          } else {
            ir::GeluChainRow(x + begin, y + begin, end - begin, p.gelu_divisor, p.gelu_half_first, vector, wide);
          }
        });
      }
      return Apply(pool, x, y, n, [](T v) { return T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2)))); });
    case UnaryOp::kExp: return Apply(pool, x, y, n, [](T v) { return std::exp(v); });
    case UnaryOp::kSqrt: return Apply(pool, x, y, n, [](T v) { return std::sqrt(v); });
  }
}

class MathKernel : public Kernel {
 public:
  explicit MathKernel(UnaryParams p) : p_(p) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    return DispatchFloat(x.dtype(), "input", [&](auto tag) {
      using T = decltype(tag);
      QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), x.dims()));
      RunMath<T>(*ctx.pool, p_, x.data<T>(), y.data<T>(), x.num_elements());
      outputs[0] = std::move(y);
      return absl::OkStatus();
    });
  }

 private:
  UnaryParams p_;
};

// Clip(x, min?, max?): bounds are optional scalars of x's type.
class ClipKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    const Tensor* lo = inputs.size() > 1 ? inputs[1] : nullptr;
    const Tensor* hi = inputs.size() > 2 ? inputs[2] : nullptr;
    for (const Tensor* b : {lo, hi}) {
      if (b == nullptr) continue;
      if (b->dtype() != x.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat("Clip bound type ", ir::DataTypeName(b->dtype()),
                                                       " differs from input type ", ir::DataTypeName(x.dtype())));
      }
      if (b->num_elements() != 1) return absl::InvalidArgumentError("Clip bounds must be scalars");
    }
    return DispatchNumeric(x.dtype(), "Clip input", [&](auto tag) {
      using T = decltype(tag);
      const T low = lo != nullptr ? lo->data<T>()[0] : std::numeric_limits<T>::lowest();
      const T high = hi != nullptr ? hi->data<T>()[0] : std::numeric_limits<T>::max();
      QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), x.dims()));
      // ONNX: min(max(x, low), high); when low > high every element becomes high.
      Apply(*ctx.pool, x.data<T>(), y.data<T>(), x.num_elements(),
            [low, high](T v) { return std::min(std::max(v, low), high); });
      outputs[0] = std::move(y);
      return absl::OkStatus();
    });
  }
};

class IdentityKernel : public Kernel {
 public:
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    outputs[0] = *inputs[0];
    return absl::OkStatus();
  }
};

// Dropout(data, ratio?, training_mode?) -> output, mask?. Inference (or ratio 0) is
// the identity with an all-true mask. Training mode keeps each element with
// probability 1 - ratio (mt19937 seeded from the `seed` attribute, default 0) and
// scales kept elements by 1 / (1 - ratio).
class DropoutKernel : public Kernel {
 public:
  explicit DropoutKernel(int64_t seed) : seed_(seed) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const Tensor* const> inputs,
                   absl::Span<Tensor> outputs) override {
    QFUSE_RETURN_IF_ERROR(RequireInputs(inputs, 1));
    const Tensor& x = *inputs[0];
    float ratio = 0.5f;
    if (inputs.size() > 1 && inputs[1] != nullptr) {
      QFUSE_ASSIGN_OR_RETURN(ratio, ReadScalarAsFloat(*inputs[1], "Dropout ratio"));
    }
    bool training = false;
    if (inputs.size() > 2 && inputs[2] != nullptr) {
      const Tensor& t = *inputs[2];
      if (t.dtype() != DataType::kBool || t.num_elements() != 1) {
        return absl::InvalidArgumentError("Dropout training_mode must be a BOOL scalar");
      }
      training = t.data<uint8_t>()[0] != 0;
    }
    if (!(ratio >= 0.f && ratio < 1.f)) {
      if (training) return absl::InvalidArgumentError(absl::StrCat("Dropout ratio ", ratio, " is not in [0, 1)"));
    }
    const bool want_mask = outputs.size() > 1;
    Tensor mask;
    if (want_mask) mask = Tensor(DataType::kBool, x.dims());
    if (!training || ratio == 0.f) {
      outputs[0] = x;
      if (want_mask) std::memset(mask.raw_data(), 1, mask.byte_size());
    } else {
      if (x.dtype() != DataType::kFloat32) {
        return absl::UnimplementedError(absl::StrCat("training-mode Dropout on ", ir::DataTypeName(x.dtype())));
      }
      QFUSE_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(x.dtype(), x.dims()));
      std::mt19937 rng(static_cast<uint32_t>(seed_));
      std::uniform_real_distribution<float> uniform(0.f, 1.f);
      const float scale = 1.f / (1.f - ratio);
      const float* in = x.data<float>();
      float* out = y.data<float>();
      uint8_t* m = want_mask ? mask.data<uint8_t>() : nullptr;
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const bool keep = uniform(rng) >= ratio;
        out[i] = keep ? in[i] * scale : 0.f;
        if (m != nullptr) m[i] = keep;
      }
      outputs[0] = std::move(y);
    }
    if (want_mask) outputs[1] = std::move(mask);
    return absl::OkStatus();
  }

 private:
  int64_t seed_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> CreateUnaryKernel(const ir::Node& node) {
  const std::string& op = node.op_type();
  const ir::AttributeMap& attrs = node.attrs();
  if (op == "Clip") return std::unique_ptr<Kernel>(new ClipKernel());
  if (op == "Identity") return std::unique_ptr<Kernel>(new IdentityKernel());
  if (op == "Dropout") {
    QFUSE_ASSIGN_OR_RETURN(int64_t seed, attrs.GetInt("seed", 0));
    return std::unique_ptr<Kernel>(new DropoutKernel(seed));
  }
  UnaryParams p;
  if (op == "Relu") {
    p.op = UnaryOp::kRelu;
  } else if (op == "LeakyRelu") {
    p.op = UnaryOp::kLeakyRelu;
    QFUSE_ASSIGN_OR_RETURN(p.alpha, attrs.GetFloat("alpha", 0.01f));
  } else if (op == "Sigmoid") {
    p.op = UnaryOp::kSigmoid;
  } else if (op == "HardSigmoid") {
    p.op = UnaryOp::kHardSigmoid;
    QFUSE_ASSIGN_OR_RETURN(p.alpha, attrs.GetFloat("alpha", 0.2f));
    QFUSE_ASSIGN_OR_RETURN(p.beta, attrs.GetFloat("beta", 0.5f));
  } else if (op == "HardSwish") {
    p.op = UnaryOp::kHardSwish;
  } else if (op == "Tanh") {
    p.op = UnaryOp::kTanh;
  } else if (op == "Erf") {
    p.op = UnaryOp::kErf;
  } else if (op == "Gelu" && node.domain() == ir::kQfuseDomain) {  // made by runtime/int8/gelu_fusion.h
    p.op = UnaryOp::kGelu;
    // int8_ops.h's kGeluDivisorAttr and kGeluHalfFirstAttr.
    QFUSE_ASSIGN_OR_RETURN(p.gelu_divisor, attrs.GetFloat("qfuse_gelu_divisor", 0.f));
    QFUSE_ASSIGN_OR_RETURN(const int64_t half_first, attrs.GetInt("qfuse_gelu_half_first", 0));
    p.gelu_half_first = half_first != 0;
  } else if (op == "Exp") {
    p.op = UnaryOp::kExp;
  } else if (op == "Sqrt") {
    p.op = UnaryOp::kSqrt;
  } else {
    return absl::UnimplementedError(absl::StrCat("unary operator ", op));
  }
  return std::unique_ptr<Kernel>(new MathKernel(p));
}

}  // namespace qfuse::runtime::kernels
