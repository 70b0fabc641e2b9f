// Turns a calibrated float graph (already fused at some level) into a standard int8 QDQ
// graph: QuantizeLinear -> DequantizeLinear pairs on quantized activations, int8
// weights and int32 biases behind DequantizeLinear.
//
// Placement: every float value that an int8 op (one with an int8 form, not kept float) reads
// or writes gets one Q -> DQ pair, and all its readers take the DQ output. A value between
// two float ops (e.g. Sigmoid -> Mul of a SiLU, the steps of a decomposed LayerNorm) stays
// float: a Q/DQ pair there adds error and no runtime would run either op in int8. Values
// computed only from shapes and constants are not activations and stay float. Ops that only
// move, clamp, pool or add values (Relu, Clip, Concat, Add, pools, reshapes) run float when no
// reader runs int8, and a Relu/Clip runs float after a float op: DenseNet's
// Concat -> BatchNormalization -> Relu -> Conv quantizes each feature map once and the BN
// output after its Relu. At fusion level `full` the ops are quantized units, so a unit's
// accumulator, residual add and activation are never requantized; at `bn` and `none` every
// op output is. Ops that keep their input's scale (ir::KeepsInputQuantization: MaxPool,
// Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity; Concat when its inputs' scales
// agree) reuse it; the inputs of an int8 Concat that only it reads take the Concat output's
// range, so such a Concat moves bytes (quant/shared_ranges.h; not for target onnxruntime); the
// average pools take it times (1 + 2^-8) (their means never leave the
// input's range; the margin keeps them off rounding ties). Graph outputs stay float (the last
// op dequantizes). Nodes named in `keep_float` read float values and are not quantized
// themselves.
//
// The deploy target (quant/deploy_target.h) adjusts this: for onnxruntime, a Relu/Clip that
// reads an int8 Add's only output is absorbed into the Add's output quantization (no Q/DQ
// between, as inside a unit), so onnxruntime fuses Add -> Relu -> QuantizeLinear into QLinearAdd;
// for tensorrt, activations must be int8, biases stay float and weights are written as
// float -> QuantizeLinear -> DequantizeLinear (TensorRT 8 and 10 both parse that form), per
// output channel on axis 0 (ConvTranspose: per tensor), and the result must pass
// CheckTensorRtPlacement (quant/placement_check.h).
#ifndef QFUSE_QUANT_QDQ_CONVERTER_H_
#define QFUSE_QUANT_QDQ_CONVERTER_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calib/calibration_table.h"
#include "calib/thresholds.h"
#include "ir/model.h"
#include "quant/deploy_target.h"

namespace qfuse::quant {

enum class ActivationType {
  kInt8,   // symmetric, zero point 0, scale = threshold / 127
  kUint8,  // non-negative tensors: zero point 0, scale = threshold / 255; others zero point 128
};

struct ConvertOptions {
  DeployTarget target = DeployTarget::kQfuse;
  ActivationType activation_type = ActivationType::kInt8;
  bool per_channel_weights = true;     // per output channel; false: one scale per weight tensor
  bool reduce_range = false;           // 7-bit weights in [-64, 64] (weight_quantizer.h)
  // kInt8 only: the same grid (scale threshold / 127, values -128..127) stored as UINT8 with
  // zero point 128, so every dequantized value and qfuse's outputs are bit for bit those of
  // zero point 0, while onnxruntime's x86 QLinearConv, which takes uint8 activations only,
  // runs every quantized Conv (its int8-to-uint8 rewrite skips a Q read by two nodes).
  bool int8_as_uint8 = false;
  // int8_as_uint8 only: values non-negative by construction (ir/value_sign.h: Relu/Relu6/Sigmoid
  // outputs and what pools, moves or concatenates them) get the unsigned grid instead, zero
  // point 0 and scale T / 255: twice the levels for the same range, where the symmetric grid
  // would leave its negative half unused. Calibration must search their thresholds over 256
  // levels (UnsignedGridOf).
  bool unsigned_non_negative = false;
  // With unsigned_non_negative: values bounded below by construction at L < 0 (HardSwish
  // >= -0.376, SiLU >= -0.279, and what moves, pools or concatenates them; ir/value_sign.h)
  // get a uint8 grid of [max(L, -T), T]: scale (T - lo) / 255, zero point round(-lo / scale).
  bool bounded_below = false;
  // Conv units with a residual or an activation, reading UINT8-stored activations, are written
  // in the integer-head form (quant/integer_heads.h), which onnxruntime runs with qfuse's exact
  // arithmetic instead of a float32 convolution.
  bool integer_heads = false;
  std::set<std::string> keep_float;    // node names left in float
  // A layer whose bias does not fit beside its worst-case accumulation gets wider weight scales
  // on the offending channels (weight_quantizer.h). Such a channel's output is its bias to
  // within a few parts per million, so the widening is judged in that output: when the widened
  // weights' rounding can move it by more than this fraction of the bias
  // (QuantizedWeights::widened_output_error), or no scale fits at all, the layer is kept float
  // instead. Either way the layer is listed in ConversionStats::notes. (An earlier rule judged
  // the channel's weight SQNR, with a 12 dB budget: dead channels of trained models, whose
  // weights are nothing beside their bias, then kept whole layers float.)
  double max_widened_output_error = 1.0 / 256;
};

// Which ConvertOptions fields the user chose; the others take their target's default.
struct UserChoices {
  bool activation_type = false;
  bool reduce_range = false;
  bool int8_as_uint8 = false;
  bool unsigned_non_negative = false;
  bool bounded_below = false;
  bool integer_heads = false;
};

// `options` with `options.target`'s defaults for every field the user did not choose:
// onnxruntime takes uint8 activations (a Relu/Clip before a QuantizeLinear with zero point 0 is
// absorbed) and 7-bit weights (exact on x86 without VNNI); qfuse and tensorrt keep int8
// activations and 8-bit weights; qfuse stores its int8 activations as uint8 + 128
// (int8_as_uint8), puts non-negative values on the unsigned grid and writes integer heads,
// tensorrt stores INT8 with zero point 0.
ConvertOptions WithTargetDefaults(ConvertOptions options, const UserChoices& chosen);

// The calibration grid rule that matches `options`' activation parameters: uint8 activations
// take the unsigned grid where the observed minimum is >= 0, unsigned_non_negative where the
// value is non-negative by construction, else none.
calib::UnsignedGrid UnsignedGridOf(const ConvertOptions& options);

struct ConversionStats {
  int64_t quantized_activations = 0;  // Q/DQ pairs inserted
  int64_t quantized_weights = 0;
  int64_t widened_bias_channels = 0;  // weight scales raised so the int32 bias fits
  int64_t float_ops = 0;              // ops left in float between DQ and Q
  int64_t bias_float_layers = 0;      // layers kept float because their bias could not fit
  int64_t integer_heads = 0;          // units written in the integer-head form
  int64_t unsigned_activations = 0;   // activation Q/DQ pairs on a bounded grid (zero point not 128)
  // One line per layer whose weight scales were widened for its bias, or that was kept float.
  std::vector<std::string> notes;
};

// `model` is modified in place. Every quantized activation must be in `table`. Fails when the
// options contradict the target (tensorrt with uint8 activations).
absl::StatusOr<ConversionStats> ConvertToQdq(ir::Model* model, const calib::CalibrationTable& table,
                                             const ConvertOptions& options);

}  // namespace qfuse::quant

#endif  // QFUSE_QUANT_QDQ_CONVERTER_H_
