#include "runtime/onednn/int8_conv_engine.h"

#include <algorithm>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "numerics/requantize.h"
#include "runtime/cpu_isa.h"
#include "runtime/onednn/onednn_engine.h"

namespace qfuse::runtime::onednn {
namespace {

// oneDNN's ISA after the cap: Engine() applies QFUSE_MAX_ISA first (oneDNN ignores
// set_max_cpu_isa once anything has queried its ISA; asking here first left it at AMX under
// QFUSE_MAX_ISA=avx2).
dnnl::cpu_isa EffectiveIsa() {
  Engine();
  return dnnl::get_effective_cpu_isa();
}

Int8ConvEngine& EngineChoice() {
  static Int8ConvEngine choice = [] {
    const char* v = std::getenv("QFUSE_INT8_CONV");
    if (v != nullptr && std::string(v) == "tiles") return Int8ConvEngine::kTiles;
    if (v != nullptr && std::string(v) == "onednn") return Int8ConvEngine::kOneDnn;
    return Int8ConvEngine::kAuto;
  }();
  return choice;
}

}  // namespace

bool OneDnnHasVnni() {
  if (!VnniAllowed()) return false;
  // oneDNN's ISA values are bit sets, not an order: avx2_vnni (0x407) is numerically above
  // every AVX-512 level without being one.
  switch (EffectiveIsa()) {
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx: return true;
    default: return false;
  }
}

void SetInt8ConvEngine(Int8ConvEngine engine) { EngineChoice() = engine; }
Int8ConvEngine CurrentInt8ConvEngine() { return EngineChoice(); }

bool UseTiles(ir::DataType x_type, const ir::Tensor& weights, int64_t group) {
  if (!OneDnnInt8IsExact(x_type, weights, group) && !OneDnnSplitSourceIsExact(x_type)) return true;
  // Otherwise oneDNN (directly, or through the split source) and the tiles are both exact; in
  // kAuto the unit times the two per input shape (runtime/engine_tuner.h). Depthwise units never
  // need the split: oneDNN's int8 depthwise kernels are exact for any weights.
  return EngineChoice() == Int8ConvEngine::kTiles;
}

// oneDNN is never given a signed int8 source below VNNI (it would halve the weights to make
// room for its own +128 shift, rounding odd weights): the kernel flips int8 activations to
// uint8 itself.
bool IsDepthwise(const ir::Tensor& weights, int64_t group) {
  return group > 1 && weights.rank() == 4 && weights.dims()[1] == 1 && weights.dims()[0] == group;
}

bool IsExactInt8DepthwiseImplementation(const std::string& implementation) {
  return implementation.rfind("jit_uni_int8:", 0) == 0 || implementation.rfind("jit_int8:", 0) == 0;
}

bool OneDnnInt8IsExact(ir::DataType x_type, const ir::Tensor& weights, int64_t group) {
  if (!UseOneDnn() || !IsaAllowed(Isa::kAvx2)) return false;
  if (x_type != ir::DataType::kUint8 && x_type != ir::DataType::kInt8) return false;
  if (OneDnnHasVnni()) return true;
  if (static_cast<int>(EffectiveIsa()) < static_cast<int>(dnnl::cpu_isa::avx2)) return false;
  if (IsDepthwise(weights, group)) return true;
  for (int8_t w : weights.values<int8_t>()) {
    if (std::abs(int{w}) > numerics::kMaxAbsInt16PairWeight) return false;
  }
  return true;
}

int64_t MaxChannelSignedWeightSum(const ir::Tensor& weights) {
  if (weights.dtype() != ir::DataType::kInt8 || weights.rank() < 1 || weights.dims()[0] == 0) return 0;
  const int64_t channels = weights.dims()[0], per_channel = weights.num_elements() / channels;
  const absl::Span<const int8_t> w = weights.values<int8_t>();
  int64_t most = 0;
  for (int64_t c = 0; c < channels; ++c) {
    int64_t positive = 0, negative = 0;
    for (int64_t k = 0; k < per_channel; ++k) {
      const int v = w[c * per_channel + k];
      (v > 0 ? positive : negative) += std::abs(v);
    }
    most = std::max({most, positive, negative});
  }
  return most;
}

bool OneDnnInt32SumsAreExact(const std::string& implementation, int64_t signed_weight_sum, bool int8_source,
                             bool source_zero_point) {
  const auto starts_with = [&](const char* prefix) { return implementation.rfind(prefix, 0) == 0; };
  if ((starts_with("brgconv:") || starts_with("brgconv_1x1:")) && !int8_source && !source_zero_point) return true;
  constexpr int64_t kFloatExactIntegers = int64_t{1} << 24;
  return (int8_source ? 383 : 255) * signed_weight_sum <= kFloatExactIntegers;
}

bool OneDnnSplitSourceIsExact(ir::DataType x_type) {
  if (!UseOneDnn() || !IsaAllowed(Isa::kAvx2) || OneDnnHasVnni()) return false;
  if (x_type != ir::DataType::kUint8 && x_type != ir::DataType::kInt8) return false;
  return static_cast<int>(EffectiveIsa()) >= static_cast<int>(dnnl::cpu_isa::avx2);
}

}  // namespace qfuse::runtime::onednn
