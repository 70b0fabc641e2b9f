// Which engine computes the exact int32 accumulators of a channels-last integer conv unit
// (qlinear_conv_kernel.h): oneDNN's int8 convolution directly, oneDNN through the split source
// (source_split.h), or qfuse's channels-last tiles (runtime/kernels/quant/nhwc_conv.h), chosen
// from the CPU under the ISA cap, the weights and the process-wide engine setting.
#ifndef QFUSE_RUNTIME_ONEDNN_INT8_CONV_ENGINE_H_
#define QFUSE_RUNTIME_ONEDNN_INT8_CONV_ENGINE_H_

#include <cstdint>
#include <string>

#include "ir/data_type.h"
#include "ir/tensor.h"

namespace qfuse::runtime::onednn {

// Whether oneDNN computes the exact int32 accumulator for activations of `x_type` and these
// int8 weights on this CPU (under the ISA cap): always with VNNI (OneDnnHasVnni: vpdpbusd sums
// without saturation); at AVX2 / AVX-512 without VNNI, whose vpmaddubsw saturates pairs of products
// to int16, only for weights within [-64, 64] (--reduce_range), where a pair of a uint8 source
// and a weight is at most 255 * 64 * 2 = 32640. INT8 activations are then flipped to uint8
// (x ^ 0x80, zero point + 128) before oneDNN reads them.
//
// Depthwise convolutions (`group` equal to the weights' output channels, one input channel
// each) are exact below VNNI for any int8 weights: oneDNN 2.6's int8 depthwise kernels
// (jit_uni_int8 at AVX2, jit_int8 at AVX-512 without VNNI) widen the source to 32-bit lanes
// (zero-extended) and the weights sign-extended, and vpmaddwd then forms one product per lane,
// never a pair. Only those implementations qualify: the kernel checks the one oneDNN picked
// (IsExactInt8DepthwiseImplementation) and otherwise does not use oneDNN for the unit.
bool OneDnnInt8IsExact(ir::DataType x_type, const ir::Tensor& weights, int64_t group = 1);
// Whether weights [O, I/group, KH, KW] with this group are a depthwise convolution's.
bool IsDepthwise(const ir::Tensor& weights, int64_t group);
// Whether an implementation name (primitive_desc::impl_info_str) is one of the int8 depthwise
// kernels above, whose products are exact below VNNI.
bool IsExactInt8DepthwiseImplementation(const std::string& implementation);
// Whether oneDNN gives the exact accumulator for any int8 weights through the split source
// (source_split.h: a 7-bit source plus the outliers added back): at AVX2 and AVX-512 without
// VNNI, for INT8/UINT8 activations.
bool OneDnnSplitSourceIsExact(ir::DataType x_type);
// Whether oneDNN runs its VNNI int8 kernels under the ISA cap: AVX-512 VNNI, or AVX-VNNI
// (oneDNN's avx2_vnni, at qfuse's kAvx2Vnni cap and above where the CPU has it). vpdpbusd sums
// four u8 x s8 products into int32 without saturation, so its accumulators are exact for any
// int8 weights, and it reads int8 sources itself (a +128 shift with its own compensation).
bool OneDnnHasVnni();

// The largest one-signed weight sum of int8 weights [O, I/group, KH, KW]: over the output
// channels c, the larger of sum_k max(w[c][k], 0) and sum_k max(-w[c][k], 0). A channel's sum
// of (x - zp) * w, with x - zp anywhere in an interval of width 255 around 0, is at most 255
// times it in magnitude.
int64_t MaxChannelSignedWeightSum(const ir::Tensor& weights);
// Whether oneDNN's int32 output of an int8 convolution made by `implementation` (its
// impl_info_str) equals the exact sums, for weights whose MaxChannelSignedWeightSum is
// `signed_weight_sum`, a source that reaches oneDNN as int8 (`int8_source`, which oneDNN
// shifts by +128) or uint8, with or without a source zero point. oneDNN 2.6's jit_uni_int8 /
// jit_int8 convolutions and their 1x1 forms (every int8 kernel below AVX-512 VNNI), its
// GEMM-based and reference ones take the int32 sums (or the sums and their compensations, then
// added) through float32 (a scale of 1) before they store them, exact only up to
// 2^24: S * signed_weight_sum must stay within it (S = 255 for a uint8 source; 383 for an int8
// one, a margin for oneDNN's +128 shift). brgconv and brgconv_1x1 on a uint8 source without a
// zero point store the int32 sums as they are (int8_conv_exact_test: odd sums up to 7.5e7); with an
// int8 source (its +128 compensation) or a zero point they take the same float32 step.
// int8_conv_exact_test's large-sum units check the kernels this CPU runs under each cap.
bool OneDnnInt32SumsAreExact(const std::string& implementation, int64_t signed_weight_sum, bool int8_source,
                             bool source_zero_point);

// Where the accumulators come from: kAuto picks per unit (UseTiles); a unit that can run on
// both oneDNN and the tiles then times both on its first calls at each input shape and keeps
// the faster (runtime/engine_tuner.h), and on oneDNN it gives a split source dense in outliers
// to the float-exact path or the tiles, per call; kOneDnn runs every unit oneDNN can run exactly
// on oneDNN (tests use it to exercise the split on every shape); kTiles runs every unit on the
// tiles. QFUSE_INT8_CONV=tiles|onednn sets the start value (benchmarks).
enum class Int8ConvEngine { kAuto, kOneDnn, kTiles };
void SetInt8ConvEngine(Int8ConvEngine engine);
Int8ConvEngine CurrentInt8ConvEngine();

// True when a unit with these activations, weights and group runs on the tiles: always
// where oneDNN is not exact, else as chosen above (in kAuto: never; the unit's engine tuning
// decides).
bool UseTiles(ir::DataType x_type, const ir::Tensor& weights, int64_t group);

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_RUNTIME_ONEDNN_INT8_CONV_ENGINE_H_
