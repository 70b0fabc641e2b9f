// The output stage of qfuse's integer kernels: one or two integer terms (an int32
// accumulator with its bias, and optionally a second centred int8 input such as a
// residual) scaled to the output's quantization and rounded ONCE, with the activation
// applied as the clamp bounds of that single rounding. Output is int8/uint8 or float.
//
// Notation: a = first term (int32: accumulator + bias, or a centred input x_q - zp_x),
// b = second term (centred input r_q - zp_r, |b| <= 255), m_a[c] and m_b the real
// multipliers (m_a[c] = s_x * s_w[c] / s_y for a unit, s_x / s_y for a plain input,
// m_b = s_r / s_y), zp = output zero point, [lo, hi] the clamp bounds in the output's
// integer domain (the type limits intersected with the quantized activation bounds:
// Relu -> lo = max(qmin, zp); Clip(a, b) -> [QuantizeLinear(a), QuantizeLinear(b)]; since
// QuantizeLinear is monotonic this equals clipping in float before quantizing).
//
// Mode kOnnx (float32 multipliers, round half to even; bit-exact with onnxruntime's
// QLinearConv / QLinearMatMul for one term):
//     f  = float32(a) * m_a[c]                     m_a[c] = numerics::OnnxMultiplier(s_x, s_w[c], s_y)
//     f += float32(b) * m_b                         two-term only; one float32 multiply-add pair,
//                                                   m_b = float32(s_r / s_y)
//     q  = round_half_to_even(clamp(f, lo - zp, hi - zp)) + zp
//
// Mode kOnnx with dequantize_then_quantize (the integer-head form of a unit, written by
// quant/integer_heads.h as ConvInteger -> Add bias -> DequantizeLinear -> [Add DQ(residual)]
// -> [Relu | Clip] -> QuantizeLinear, which onnxruntime runs op by op in exactly these
// float32 operations):
//     f  = float32(a) * d_a[c]                     d_a[c] = float32(s_x * s_w[c]) (the bias scale)
//     f += float32(b) * s_r                         two-term only; a separate multiply and add
//     f  = f / s_y                                  float32 division (QuantizeLinear)
//     q  = round_half_to_even(clamp(f, lo - zp, hi - zp)) + zp
//   The clamp after the division equals Relu/Clip before it (division by s_y > 0 and
//   rounding are monotonic, and the bounds are QuantizeLinear of the real bounds). The plain
//   kOnnx form above is this one with d_a = m_a, s_r = m_b and a division by exactly 1.
//
// Mode kFixed (integer only at run time; numerics::MultiplyByQuantizedMultiplier is the
// gemmlowp / TFLite product with a Q31 multiplier and shift):
//   one term:   q = clamp(MultiplyByQuantizedMultiplier(a, M(m_a[c])) + zp, lo, hi)
//               (numerics::RequantizeFixed with activation bounds; ties away from zero,
//               with the double rounding documented in requantize.h)
//   two terms:  both terms are brought to the common scale s_y / 2^16 first:
//               t = sat32(MultiplyByQuantizedMultiplier(a, M(m_a[c] * 2^16))
//                         + MultiplyByQuantizedMultiplier(b, M(m_b * 2^16)))   (sum in int64)
//               q = clamp(RoundingDivideByPOT(t, 16) + zp, lo, hi)              (ties away from 0)
//               Each term is within ~1.5 * 2^-16 LSB of its exact value, so q is the
//               correctly rounded (half away from zero) result except within 2^-15 LSB of
//               a tie. Saturation of t only happens beyond +-2^15 LSB, far outside [lo, hi].
//   M(r) = numerics::QuantizeMultiplier(r): r must lie in [2^-32, 2^30), else Prepare fails.
//
// Float output (a unit that is a graph output, both modes): the terms are dequantized,
//     y = clamp(float32(a) * d_a[c] + float32(b) * s_r, act_lo, act_hi)
// with d_a[c] = float32(s_x * s_w[c]) (the bias scale), and float activation bounds.
//
// Non-linear activations (a unit's HardSwish, HardSigmoid, Sigmoid, SiLU, LeakyRelu) are no
// clamp, so the real value is needed. Their epilogue (the caller composes it; both modes,
// kFixed falls back to this float arithmetic, needing no fixed multipliers) is
//     v = float32(a) * d_a[c] + float32(b) * s_r       DequantizeRow without bounds
//     v = act(v)                                       float32, ir::ApplyUnitActivation
//     q = round_half_to_even(clamp(v / s_y, qmin - zp, qmax - zp)) + zp
//                                                      QuantizeRealRow: ONNX QuantizeLinear
// (qmin, qmax the output type's limits). This is the simulated-quantization graph DQ ->
// base op -> [Add] -> activation -> Q, except that the accumulation is exact here and in
// float32 there, so the two agree to within 1 LSB (equal but for values near a tie).
#ifndef QFUSE_RUNTIME_INT8_OUTPUT_STAGE_H_
#define QFUSE_RUNTIME_INT8_OUTPUT_STAGE_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/data_type.h"
#include "ir/fused_unit.h"
#include "numerics/requantize.h"
#include "runtime/int8/byte_table.h"
#include "runtime/kernels/quant/quantize_row.h"

namespace qfuse::runtime::int8 {


// A byte map's linear form (OutputStage::SetByteMap): r -> clamp(round(r * ratio), lo, hi) +
// zero_point, in float32 with MAXPS/MINPS and round half to even.
struct LinearByteMap {
  float ratio = 1.f, lo = 0.f, hi = 0.f;
  int32_t zero_point = 0;
};

// Fraction bits of the common intermediate scale of two-term kFixed requantization.
inline constexpr int kTwoTermFractionBits = 16;

// Instruction sets of the vectorised QuantizeRow (chosen at run time; every level gives
// the same bytes as the scalar code).
enum class RequantizeIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
// The best level this CPU supports under the process's ISA cap (runtime/cpu_isa.h).
RequantizeIsa MaxRequantizeIsa();
// Caps the level used by QuantizeRow further (process-wide; for tests and benchmarks).
// CurrentRequantizeIsa() is the lower of this and MaxRequantizeIsa().
void SetRequantizeIsa(RequantizeIsa isa);
RequantizeIsa CurrentRequantizeIsa();

// One term's scale: the real multiplier is input_scale * weight_scales[c] / output_scale
// (weight_scales = {1} for a plain input).
struct TermScales {
  float input_scale = 1.f;
  std::vector<float> weight_scales = {1.f};
};

struct OutputStageSpec {
  numerics::RequantizeMode mode = numerics::RequantizeMode::kOnnx;
  ir::DataType output_type = ir::DataType::kInt8;  // kInt8, kUint8 or kFloat32
  float output_scale = 1.f;                        // quantized outputs only
  int32_t output_zero_point = 0;
  TermScales a;
  bool has_b = false;
  TermScales b;  // weight_scales must be {1}
  // Activation bounds in real units (lowest()/max() when absent).
  float act_min = std::numeric_limits<float>::lowest();
  float act_max = std::numeric_limits<float>::max();
  // kOnnx, quantized output: dequantize both terms, add, divide by the output scale (the
  // integer-head form above) instead of one multiplier per term. Ignored in kFixed.
  bool dequantize_then_quantize = false;
};

class OutputStage {
 public:
  // Validates the spec and precomputes multipliers (InvalidArgument naming the channel
  // when a kFixed multiplier is out of range).
  static absl::StatusOr<OutputStage> Create(const OutputStageSpec& spec);

  // The type of the bytes written: the stage's, or the byte map's (SetByteMap).
  ir::DataType output_type() const { return byte_map_ != nullptr ? mapped_type_ : output_type_; }
  bool has_b() const { return has_b_; }
  int64_t channels() const { return static_cast<int64_t>(onnx_a_.size()); }
  int32_t lo() const { return lo_; }
  int32_t hi() const { return hi_; }

  // A byte map applied after the stage to every quantized output the row, channel and pixel
  // functions below write: out = map[stage(...)], with the map's bytes of type `mapped_type`
  // (a requantizing clamp folded into the unit before it, qdq_lowering.h). Quantize() is
  // the stage alone, and so is QuantizeRealRow (the float epilogue of non-linear activations,
  // which the lowering never folds a clamp into).
  // `ratio` (float32, the stage's output scale over the mapped bytes' scale) gives the
  // vectorised pixel functions a linear form of the map, clamp(round(r * ratio), lo, hi) +
  // zp for the stage's integer r before its zero point, used only if it equals the map on
  // every r the stage can write (checked here).
  void SetByteMap(const ByteTable& map, ir::DataType mapped_type, float ratio);
  bool has_linear_byte_map() const { return linear_map_.has_value(); }

  // The stage as plain float32 steps, for an engine that computes them in its own kernel
  // (runtime/onednn/fused_output_stage.h): r = round_half_to_even(clamp(float32(a) *
  // multipliers[c] / divisor, lo, hi)), with lo / hi the stage's bounds minus its zero point
  // and the division skipped when divisor is 1; then q = r + zero_point, or with a linear
  // byte map q = clamp(round_half_to_even(r * map.ratio), map.lo, map.hi) + map.zero_point.
  // Only one-term kOnnx stages with a quantized output and no byte map other than a linear
  // one have this form; the others return nullopt.
  struct OnnxOneTermForm {
    std::vector<float> multipliers;  // per channel, or one per tensor
    float divisor = 1.f;             // s_y with dequantize_then_quantize, else exactly 1
    float lo = 0.f, hi = 0.f;
    int32_t zero_point = 0;
    std::optional<LinearByteMap> map;
  };
  std::optional<OnnxOneTermForm> OnnxOneTerm() const;

  // Quantized output of channel c (c < channels(), or any c when per tensor).
  int32_t Quantize(int32_t a, int64_t c) const {
    const int64_t i = onnx_a_.size() == 1 ? 0 : c;
    if (mode_ == numerics::RequantizeMode::kOnnx) {
      const float f = numerics::ClampLikeMlas(Divided(static_cast<float>(a) * onnx_a_[i]), flo_, fhi_);
      return numerics::RoundHalfToEven(f) + zp_;
    }
    const int64_t q = int64_t{numerics::MultiplyByQuantizedMultiplier(a, fixed_a_[i])} + zp_;
    return static_cast<int32_t>(q < lo_ ? lo_ : (q > hi_ ? hi_ : q));
  }
  int32_t Quantize(int32_t a, int32_t b, int64_t c) const {
    const int64_t i = onnx_a_.size() == 1 ? 0 : c;
    if (mode_ == numerics::RequantizeMode::kOnnx) {
      const float f = Divided(static_cast<float>(a) * onnx_a_[i] + static_cast<float>(b) * onnx_b_);
      return numerics::RoundHalfToEven(numerics::ClampLikeMlas(f, flo_, fhi_)) + zp_;
    }
    int64_t t = int64_t{numerics::MultiplyByQuantizedMultiplier(a, fixed_a_[i])} +
                numerics::MultiplyByQuantizedMultiplier(b, fixed_b_);
    t = t < std::numeric_limits<int32_t>::min() ? std::numeric_limits<int32_t>::min()
        : t > std::numeric_limits<int32_t>::max() ? std::numeric_limits<int32_t>::max() : t;
    const int64_t q = int64_t{numerics::RoundingDivideByPOT(static_cast<int32_t>(t), kTwoTermFractionBits)} + zp_;
    return static_cast<int32_t>(q < lo_ ? lo_ : (q > hi_ ? hi_ : q));
  }
  // Float output.
  float Dequantize(int32_t a, int64_t c) const {
    const float y = static_cast<float>(a) * dequant_a_[dequant_a_.size() == 1 ? 0 : c];
    return y < act_min_ ? act_min_ : (y > act_max_ ? act_max_ : y);
  }
  float Dequantize(int32_t a, int32_t b, int64_t c) const {
    const float y = static_cast<float>(a) * dequant_a_[dequant_a_.size() == 1 ? 0 : c] + static_cast<float>(b) * dequant_b_;
    return y < act_min_ ? act_min_ : (y > act_max_ ? act_max_ : y);
  }

  // out[i] = Quantize(a[i * a_stride] + bias, c) (T = int8_t / uint8_t), or with the second
  // term b[i] - b_zp (B = int8_t / uint8_t) when b != nullptr. The mode is tested once per
  // row so the loops vectorise.
  template <typename T, typename B>
  void QuantizeRow(const int32_t* a, int64_t a_stride, int32_t bias, const B* b, int32_t b_zp, int64_t c, int64_t n,
                   T* out) const {
    static_assert(sizeof(T) == 1 && sizeof(B) == 1, "int8 / uint8 rows");
    MapBytesOnReturn mapped(byte_map_.get(), out, n);
    if (a_stride == 1 && n >= 8) {
      // Vectorised prefix: the results lie in [lo, hi] (within T), so the low byte of the
      // int32 result is the T value for int8 and uint8 alike.
      const int64_t done = QuantizeRowSimd(a, bias, reinterpret_cast<const uint8_t*>(b), std::is_signed<B>::value,
                                           b_zp, c, n, reinterpret_cast<uint8_t*>(out));
      a += done;
      if (b != nullptr) b += done;
      out += done;
      n -= done;
    }
    if (b != nullptr) {
      for (int64_t i = 0; i < n; ++i) {
        out[i] = static_cast<T>(Quantize(a[i * a_stride] + bias, static_cast<int32_t>(b[i]) - b_zp, c));
      }
    } else if (mode_ == numerics::RequantizeMode::kOnnx && a_stride == 1) {
      const float m = onnx_a_[onnx_a_.size() == 1 ? 0 : c];
      const float lo = flo_, hi = fhi_, divisor = divisor_;
      const bool divide = divisor != 1.f;
      const int32_t zp = zp_;
      for (int64_t i = 0; i < n; ++i) {
        float f = static_cast<float>(a[i] + bias) * m;
        if (divide) f /= divisor;
        f = f > lo ? f : lo;  // numerics::ClampLikeMlas
        f = f < hi ? f : hi;
        out[i] = static_cast<T>(numerics::RoundHalfToEven(f) + zp);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(Quantize(a[i * a_stride] + bias, c));
    }
  }
  // One pixel's consecutive channels (the channels-last layout): out[j] =
  // Quantize(a[j] + bias[c0 + j], b[j] - b_zp, c0 + j) for j < n, the same bytes as
  // QuantizeRow (bias null: no bias; b null: one term). Scalar; QuantizePixels is the
  // vectorised form.
  template <typename T, typename B>
  void QuantizeChannels(const int32_t* a, const int32_t* bias, const B* b, int32_t b_zp, int64_t c0, int64_t n,
                        T* out) const {
    static_assert(sizeof(T) == 1 && sizeof(B) == 1, "int8 / uint8 rows");
    MapBytesOnReturn mapped(byte_map_.get(), out, n);
    for (int64_t j = 0; j < n; ++j) {
      const int32_t acc = a[j] + (bias == nullptr ? 0 : bias[c0 + j]);
      out[j] = static_cast<T>(b == nullptr ? Quantize(acc, c0 + j)
                                           : Quantize(acc, static_cast<int32_t>(b[j]) - b_zp, c0 + j));
    }
  }
  // QuantizeChannels over `pixels` consecutive pixels of `channels` channels each (a, b and
  // out advance by `channels` per pixel; bias and scales are per channel from 0).
  template <typename T, typename B>
  void QuantizePixels(const int32_t* a, const int32_t* bias, const B* b, int32_t b_zp, int64_t channels,
                      int64_t pixels, T* out) const {
    static_assert(sizeof(T) == 1 && sizeof(B) == 1, "int8 / uint8 rows");
    const int64_t done = QuantizePixelsSimd(a, bias, reinterpret_cast<const uint8_t*>(b), std::is_signed<B>::value,
                                            b_zp, channels, pixels, reinterpret_cast<uint8_t*>(out));
    for (int64_t p = done; p < pixels; ++p) {
      QuantizeChannels(a + p * channels, bias, b == nullptr ? nullptr : b + p * channels, b_zp, 0, channels,
                       out + p * channels);
    }
  }
  // The rows of a unit computed in onnxruntime's float steps (int8_ops.h kMatMulToFloatAttr)
  // with a clamp activation or none: v = float(a[i]) * d[i], v = v + bias[i] (bias may be
  // null), v = v + float(b[i] - b_zp) * s_b (b may be null), each a float32 operation, then
  // QuantizeLinear clamped to the stage's bounds, which gives the bytes of applying the clamp
  // activation to v first (QuantizeLinear is monotonic and the bounds are its values).
  template <typename T, typename B>
  void QuantizeFloatStepsRow(const int32_t* a, const float* d, const float* bias, const B* b, int32_t b_zp, float s_b,
                             int64_t n, T* out) const {
    const int64_t done = FloatStepsSimd(a, d, bias, reinterpret_cast<const uint8_t*>(b), std::is_signed<B>::value, b_zp,
                                        s_b, n, reinterpret_cast<uint8_t*>(out));
    for (int64_t i = done; i < n; ++i) {
      const float f = numerics::ClampLikeMlas(FloatStepsValue(a, d, bias, b, b_zp, s_b, i) / output_scale_, flo_, fhi_);
      out[i] = static_cast<T>(numerics::RoundHalfToEven(f) + zp_);
    }
  }
  // Element i of QuantizeFloatStepsRow's v (b may be null), before any activation.
  template <typename B>
  static float FloatStepsValue(const int32_t* a, const float* d, const float* bias, const B* b, int32_t b_zp, float s_b,
                               int64_t i) {
    float v = static_cast<float>(a[i]) * d[i];
    if (bias != nullptr) v = v + bias[i];
    if (b != nullptr) v = v + static_cast<float>(static_cast<int32_t>(b[i]) - b_zp) * s_b;
    return v;
  }
  // out[i] = ONNX QuantizeLinear(v[i], s_y, zp) into T (int8_t / uint8_t), saturating to
  // T's limits (the non-linear activation epilogue above).
  template <typename T>
  void QuantizeRealRow(const float* v, int64_t n, T* out) const {
    // AVX2 where the RequantizeIsa level and the ISA cap allow it: the same bytes.
    kernels::quant::QuantizeLinearRow(v, n, output_scale_, zp_, out, CurrentRequantizeIsa() != RequantizeIsa::kScalar);
  }
  template <typename B>
  void DequantizeRow(const int32_t* a, int64_t a_stride, int32_t bias, const B* b, int32_t b_zp, int64_t c, int64_t n,
                     float* out) const {
    if (b == nullptr) {
      for (int64_t i = 0; i < n; ++i) out[i] = Dequantize(a[i * a_stride] + bias, c);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = Dequantize(a[i * a_stride] + bias, static_cast<int32_t>(b[i]) - b_zp, c);
    }
  }
  // DequantizePixels, ir::ApplyUnitActivation(activation) and QuantizeRealRow in one pass where
  // activated_pixels.h has the activation's form and the RequantizeIsa level is AVX-512: the
  // same bytes. b (null for none) and out are int8 or uint8 bytes as b_signed / out_signed
  // say. False when it wrote nothing.
  bool ActivatePixels(const ir::UnitSpec& activation, const int32_t* a, const int32_t* bias, const uint8_t* b,
                      bool b_signed, int32_t b_zp, int64_t channels, int64_t pixels, uint8_t* out,
                      bool out_signed) const;
  // DequantizeRow over `pixels` consecutive pixels of `channels` channels each (the
  // channels-last layout: a, b and out advance by `channels` per pixel; bias, null for none,
  // and scales per channel from 0): out[p * channels + j] = Dequantize(a[.] + bias[j], b[.] -
  // b_zp, j), the same float32 values as DequantizeRow of channel j.
  template <typename B>
  void DequantizePixels(const int32_t* a, const int32_t* bias, const B* b, int32_t b_zp, int64_t channels,
                        int64_t pixels, float* out) const {
    const int64_t whole = DequantizePixelsSimd(a, bias, reinterpret_cast<const uint8_t*>(b), std::is_signed<B>::value,
                                               b_zp, channels, pixels, out);
    for (int64_t p = 0; p < pixels; ++p) {
      const int64_t at = p * channels;
      for (int64_t j = whole; j < channels; ++j) {
        const int32_t acc = a[at + j] + (bias == nullptr ? 0 : bias[j]);
        out[at + j] = b == nullptr ? Dequantize(acc, j) : Dequantize(acc, static_cast<int32_t>(b[at + j]) - b_zp, j);
      }
    }
  }

 private:
  template <typename T>
  static void MapBytes(const ByteTable& map, T* out, int64_t n) {
    uint8_t* bytes = reinterpret_cast<uint8_t*>(out);
    LookupBytes(map, bytes, n, bytes);
  }
  // Applies the byte map (when set) to n bytes from `out` when it goes out of scope.
  class MapBytesOnReturn {
   public:
    template <typename T>
    MapBytesOnReturn(const ByteTable* map, T* out, int64_t n)
        : map_(map), out_(reinterpret_cast<uint8_t*>(out)), n_(n) {}
    ~MapBytesOnReturn() {
      if (map_ != nullptr) MapBytes(*map_, out_, n_);
    }
    MapBytesOnReturn(const MapBytesOnReturn&) = delete;
    MapBytesOnReturn& operator=(const MapBytesOnReturn&) = delete;

   private:
    const ByteTable* map_;
    uint8_t* out_;
    int64_t n_;
  };

  // f / divisor_, skipping the division (exactly the identity) in the plain form.
  float Divided(float f) const { return divisor_ == 1.f ? f : f / divisor_; }

  // Vectorised QuantizeRow over a prefix of the row (a_stride 1; b == nullptr for one
  // term); returns how many elements it wrote (0 at RequantizeIsa::kScalar).
  int64_t QuantizeRowSimd(const int32_t* a, int32_t bias, const uint8_t* b, bool b_signed, int32_t b_zp, int64_t c,
                          int64_t n, uint8_t* out) const;
  // Vectorised DequantizePixels over the first channels of every pixel; returns how many
  // channels of each it wrote (0 at RequantizeIsa::kScalar).
  int64_t DequantizePixelsSimd(const int32_t* a, const int32_t* bias, const uint8_t* b, bool b_signed, int32_t b_zp,
                               int64_t channels, int64_t pixels, float* out) const;
  // Vectorised QuantizeFloatStepsRow over a prefix of the row; returns how many it wrote.
  int64_t FloatStepsSimd(const int32_t* a, const float* d, const float* bias, const uint8_t* b, bool b_signed,
                         int32_t b_zp, float s_b, int64_t n, uint8_t* out) const;
  // Vectorised QuantizePixels (kOnnx; AVX-512 masks the channel tails, AVX2 finishes them in
  // scalar code), byte map included: all pixels, or 0 when not vectorised.
  int64_t QuantizePixelsSimd(const int32_t* a, const int32_t* bias, const uint8_t* b, bool b_signed, int32_t b_zp,
                             int64_t channels, int64_t pixels, uint8_t* out) const;

  numerics::RequantizeMode mode_ = numerics::RequantizeMode::kOnnx;
  ir::DataType output_type_ = ir::DataType::kInt8;
  bool has_b_ = false;
  int32_t zp_ = 0, lo_ = 0, hi_ = 0;
  float output_scale_ = 1.f;
  float flo_ = 0, fhi_ = 0;  // lo - zp, hi - zp
  std::vector<float> onnx_a_;
  float onnx_b_ = 0;
  float divisor_ = 1.f;  // s_y with dequantize_then_quantize, else exactly 1 (x / 1 == x)
  std::vector<numerics::FixedMultiplier> fixed_a_;
  numerics::FixedMultiplier fixed_b_;
  std::vector<float> dequant_a_;
  float dequant_b_ = 0;
  float act_min_ = 0, act_max_ = 0;
  std::shared_ptr<const ByteTable> byte_map_;  // SetByteMap, or null
  ir::DataType mapped_type_ = ir::DataType::kInt8;
  std::optional<LinearByteMap> linear_map_;  // the map's checked linear form
};

}  // namespace qfuse::runtime::int8

#endif  // QFUSE_RUNTIME_INT8_OUTPUT_STAGE_H_
