// The standard quantized operators against hand-computed rounding ties and a naive
// integer reference (exact equality).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "numerics/requantize.h"
#include "runtime/reference/conv.h"
#include "runtime/reference/gemm.h"
#include "tests/runtime/kernels/elementwise/one_node.h"
#include "tests/testing/isa_cap_guard.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::testing {
namespace {

using ir::AttributeMap;
using ir::Tensor;

template <typename T>
Tensor Scalar(T v) {
  return Tensor::Scalar<T>(v);
}

AttributeMap Attrs(std::initializer_list<std::pair<const std::string, ir::AttributeValue>> list) {
  AttributeMap m;
  for (const auto& [k, v] : list) m.Set(k, v);
  return m;
}

template <typename T>
std::vector<T> RandomValues(std::mt19937& rng, int64_t n, int lo = std::numeric_limits<T>::lowest(),
                            int hi = std::numeric_limits<T>::max()) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// ---- QuantizeLinear / DequantizeLinear.

TEST(QuantizeLinearTest, TiesToEvenSaturatesDefaultsToUint8) {
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto out, RunOneNode("QuantizeLinear", {In(T1<float>({8}, {1, 3, 5, 7, -1, -3, 1000, -1000})), In(Scalar(2.0f))}));
  EXPECT_EQ(out[0].dtype(), ir::DataType::kUint8);
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{0, 2, 2, 4, 0, 0, 255, 0}));
  QFUSE_ASSERT_OK_AND_ASSIGN(out, RunOneNode("QuantizeLinear", {In(T1<float>({6}, {1, 3, 5, -3, -5, 300})),
                                                                  In(Scalar(2.0f)), In(Scalar<int8_t>(-1))}));
  EXPECT_EQ(out[0].dtype(), ir::DataType::kInt8);
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{-1, 1, 1, -3, -3, 127}));
}

TEST(QuantizeLinearTest, PerAxis) {
  // [2, 3] with axis 1: column c uses scale[c], zp[c]; axis 0 (rows) with 2 values.
  const Tensor x = T1<float>({2, 3}, {1, 1, 1, -3, -3, -3});
  QFUSE_ASSERT_OK_AND_ASSIGN(auto out, RunOneNode("QuantizeLinear", {In(x), In(T1<float>({3}, {1, 2, 0.5f})),
                                                                     In(T1<int8_t>({3}, {0, 10, -10}))}));
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{1, 10, -8, -3, 8, -16}));  // 0.5 -> 0, -1.5 -> -2
  QFUSE_ASSERT_OK_AND_ASSIGN(out, RunOneNode("QuantizeLinear",
                                             {In(x), In(T1<float>({2}, {1, 2})), In(T1<uint8_t>({2}, {5, 6}))},
                                             Attrs({{"axis", int64_t{0}}})));
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{6, 6, 6, 4, 4, 4}));  // -1.5 -> -2
  EXPECT_FALSE(RunOneNode("QuantizeLinear", {In(x), In(T1<float>({2}, {1, 2}))}).ok());  // axis 1 has 3
}

// The vector QuantizeLinear (AVX2, 32 values at a time) against numerics::QuantizeLinear per
// value, under every cap this CPU has: exact ties, values next to ties, saturation both ways,
// infinities and NaN (the low bound, as onnxruntime's MLAS), per tensor and per axis with runs
// that are not multiples of 32.
TEST(QuantizeLinearTest, EveryCapGivesTheScalarBytes) {
  IsaCapGuard guard;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> wide(-400.f, 400.f);
  std::vector<float> values(3 * 77);
  for (size_t i = 0; i < values.size(); ++i) {
    switch (i % 7) {
      case 0: values[i] = 0.5f * static_cast<float>(static_cast<int>(rng() % 600) - 300); break;  // ties at scale 1
      case 1: values[i] = std::nextafter(0.5f * static_cast<float>(static_cast<int>(rng() % 600) - 300), 1e9f); break;
      case 2: values[i] = i % 3 == 0 ? INFINITY : -INFINITY; break;
      case 3: values[i] = i % 2 == 0 ? NAN : 1e30f; break;
      default: values[i] = wide(rng); break;
    }
  }
  const Tensor x = T1<float>({3, 77}, values);
  for (runtime::Isa cap : {runtime::Isa::kScalar, runtime::Isa::kAvx2}) {
    if (cap > runtime::DetectedIsa()) continue;
    runtime::SetIsaCap(cap);
    // Per tensor (scale 1: the ties stay ties), int8 and uint8.
    QFUSE_ASSERT_OK_AND_ASSIGN(auto i8, RunOneNode("QuantizeLinear", {In(x), In(Scalar(1.0f)), In(Scalar<int8_t>(-3))}));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto u8, RunOneNode("QuantizeLinear", {In(x), In(Scalar(0.75f)), In(Scalar<uint8_t>(128))}));
    // Per axis 0: runs of 77 values, one scale and zero point each.
    QFUSE_ASSERT_OK_AND_ASSIGN(auto axis, RunOneNode("QuantizeLinear", {In(x), In(T1<float>({3}, {1.f, 0.5f, 3.f})),
                                                                        In(T1<uint8_t>({3}, {0, 7, 255}))},
                                                     Attrs({{"axis", int64_t{0}}})));
    const std::vector<int8_t> got_i8 = Values<int8_t>(i8[0]);
    const std::vector<uint8_t> got_u8 = Values<uint8_t>(u8[0]), got_axis = Values<uint8_t>(axis[0]);
    const float axis_scale[3] = {1.f, 0.5f, 3.f};
    const int32_t axis_zp[3] = {0, 7, 255};
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(got_i8[i], numerics::QuantizeLinear<int8_t>(values[i], 1.f, -3)) << "cap " << runtime::IsaName(cap) << " " << values[i];
      ASSERT_EQ(got_u8[i], numerics::QuantizeLinear<uint8_t>(values[i], 0.75f, 128)) << "cap " << runtime::IsaName(cap) << " " << values[i];
      ASSERT_EQ(got_axis[i], numerics::QuantizeLinear<uint8_t>(values[i], axis_scale[i / 77], axis_zp[i / 77]))
          << "cap " << runtime::IsaName(cap) << " " << values[i];
    }
  }
}

// The vector DequantizeLinear of bytes (AVX2, 8 at a time) against numerics::Dequantize per
// value under every cap this CPU has: every int8 and uint8 value, per tensor and per axis with
// runs (77) that are not multiples of 8.
TEST(DequantizeLinearTest, EveryCapGivesTheScalarValues) {
  IsaCapGuard guard;
  std::vector<int8_t> s8(3 * 77);
  std::vector<uint8_t> u8(3 * 77);
  for (size_t i = 0; i < s8.size(); ++i) {
    s8[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 256) - 128);
    u8[i] = static_cast<uint8_t>(i * 53 % 256);
  }
  const float axis_scale[3] = {0.1f, 1e-3f, 7.5f};
  const int32_t axis_zp[3] = {0, 128, 255};
  for (runtime::Isa cap : {runtime::Isa::kScalar, runtime::Isa::kAvx2}) {
    if (cap > runtime::DetectedIsa()) continue;
    runtime::SetIsaCap(cap);
    QFUSE_ASSERT_OK_AND_ASSIGN(auto per_tensor, RunOneNode("DequantizeLinear", {In(T1<int8_t>({3, 77}, s8)),
                                                                                In(Scalar(0.0371f)), In(Scalar<int8_t>(-5))}));
    QFUSE_ASSERT_OK_AND_ASSIGN(auto axis, RunOneNode("DequantizeLinear", {In(T1<uint8_t>({3, 77}, u8)),
                                                                          In(T1<float>({3}, {0.1f, 1e-3f, 7.5f})),
                                                                          In(T1<uint8_t>({3}, {0, 128, 255}))},
                                                     Attrs({{"axis", int64_t{0}}})));
    const std::vector<float> got = Values<float>(per_tensor[0]), got_axis = Values<float>(axis[0]);
    for (size_t i = 0; i < s8.size(); ++i) {
      ASSERT_EQ(got[i], numerics::Dequantize(s8[i], 0.0371f, -5)) << "cap " << runtime::IsaName(cap) << " " << i;
      ASSERT_EQ(got_axis[i], numerics::Dequantize(u8[i], axis_scale[i / 77], axis_zp[i / 77]))
          << "cap " << runtime::IsaName(cap) << " " << i;
    }
  }
}

TEST(DequantizeLinearTest, TypesAndAxis) {
  QFUSE_ASSERT_OK_AND_ASSIGN(auto out, RunOneNode("DequantizeLinear", {In(T1<int8_t>({3}, {-128, 0, 127})),
                                                                       In(Scalar(0.5f)), In(Scalar<int8_t>(-1))}));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{-63.5f, 0.5f, 64.0f}));
  QFUSE_ASSERT_OK_AND_ASSIGN(out, RunOneNode("DequantizeLinear", {In(T1<int32_t>({2}, {-1000000, 7})), In(Scalar(0.25f))}));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{-250000.0f, 1.75f}));
  QFUSE_ASSERT_OK_AND_ASSIGN(out, RunOneNode("DequantizeLinear", {In(T1<uint8_t>({2, 2}, {0, 255, 0, 255})),
                                                                  In(T1<float>({2}, {1, 2})),
                                                                  In(T1<uint8_t>({2}, {0, 128}))},
                                             Attrs({{"axis", int64_t{-1}}})));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{0, 254, 0, 254}));
}

// ---- Convolutions.

struct ConvCase {
  int64_t n = 1, cin = 1, h = 1, w = 1, cout = 1, kh = 1, kw = 1, group = 1;
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};
  int64_t oh() const { return (h + pads[0] + pads[2] - dil_h * (kh - 1) - 1) / stride_h + 1; }
  int64_t ow() const { return (w + pads[1] + pads[3] - dil_w * (kw - 1) - 1) / stride_w + 1; }
  AttributeMap attrs() const {
    return Attrs({{"group", group},
                  {"strides", std::vector<int64_t>{stride_h, stride_w}},
                  {"dilations", std::vector<int64_t>{dil_h, dil_w}},
                  {"pads", pads}});
  }
};

// acc[n][oc][y][x] = sum (x - x_zp) * (w - w_zp[oc]) in int64, by the reference integer Conv
// (runtime/reference/conv.h).
template <typename X, typename W>
std::vector<int64_t> NaiveConv(const ConvCase& c, const std::vector<X>& x, int32_t x_zp, const std::vector<W>& w,
                               const std::vector<int32_t>& w_zp) {
  const runtime::reference::ConvParams params{c.group, {c.stride_h, c.stride_w}, {c.dil_h, c.dil_w}, c.pads, {}};
  absl::StatusOr<Tensor> acc = runtime::reference::ConvIntegerAccumulators(
      T1<X>({c.n, c.cin, c.h, c.w}, x), x_zp, T1<W>({c.cout, c.cin / c.group, c.kh, c.kw}, w), w_zp, params);
  EXPECT_TRUE(acc.ok()) << acc.status();
  if (!acc.ok()) return {};
  return std::vector<int64_t>(acc->values<int64_t>().begin(), acc->values<int64_t>().end());
}

TEST(QLinearConvTest, RoundingTiesHalfToEven) {
  // 1x1 conv with w = 1, multiplier 1 * 1 / 2: outputs acc / 2 at exact ties.
  const Tensor w = T1<int8_t>({1, 1, 1, 1}, {1});
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto out, RunOneNode("QLinearConv", {In(T1<uint8_t>({1, 1, 2, 2}, {1, 3, 5, 7})), In(Scalar(1.0f)),
                                           In(Scalar<uint8_t>(0)), Const(w), In(Scalar(1.0f)), In(Scalar<int8_t>(0)),
                                           In(Scalar(2.0f)), In(Scalar<uint8_t>(10))}));
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{10, 12, 12, 14}));  // 0.5 1.5 2.5 3.5
  // Negative ties through the input zero point: acc = -7 -5 -3 -1.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      out, RunOneNode("QLinearConv", {In(T1<uint8_t>({1, 1, 2, 2}, {1, 3, 5, 7})), In(Scalar(1.0f)),
                                      In(Scalar<uint8_t>(8)), In(w), In(Scalar(1.0f)), In(Scalar<int8_t>(0)),
                                      In(Scalar(2.0f)), In(Scalar<int8_t>(0))}));
  EXPECT_EQ(Values<int8_t>(out[0]), (std::vector<int8_t>{-4, -2, -2, 0}));
  // A bias of 1 moves every value off the tie: (acc + 1) / 2 = 1 2 3 4.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      out, RunOneNode("QLinearConv", {In(T1<uint8_t>({1, 1, 2, 2}, {1, 3, 5, 7})), In(Scalar(1.0f)),
                                      In(Scalar<uint8_t>(0)), In(w), In(Scalar(1.0f)), In(Scalar<int8_t>(0)),
                                      In(Scalar(2.0f)), In(Scalar<uint8_t>(0)), In(T1<int32_t>({1}, {1}))}));
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{1, 2, 3, 4}));
}

template <typename X, typename W, typename Y>
void CheckQLinearConv(const ConvCase& c, bool per_channel, bool constant_weights, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << (constant_weights ? " constant" : " input") << " weights");
  std::mt19937 rng(seed);
  const std::vector<X> x = RandomValues<X>(rng, c.n * c.cin * c.h * c.w);
  const std::vector<W> w = RandomValues<W>(rng, c.cout * (c.cin / c.group) * c.kh * c.kw);
  const int32_t x_zp = RandomValues<X>(rng, 1)[0];
  std::vector<int32_t> w_zp = {std::is_signed_v<W> ? 0 : 128};
  std::vector<float> w_scale = {0.004f};
  if (per_channel) {
    w_zp.assign(c.cout, w_zp[0]);
    w_scale.clear();
    std::uniform_real_distribution<float> s(0.001f, 0.01f);
    for (int64_t oc = 0; oc < c.cout; ++oc) {
      w_scale.push_back(s(rng));
      if (!std::is_signed_v<W>) w_zp[oc] = 120 + oc % 16;
    }
  }
  const std::vector<int32_t> bias = RandomValues<int32_t>(rng, c.cout, -5000, 5000);
  const float x_scale = 0.02f, y_scale = 0.05f;
  const Y y_zp = RandomValues<Y>(rng, 1, std::numeric_limits<Y>::lowest() / 2 + 64, 100)[0];
  const std::vector<int64_t> acc = NaiveConv(c, x, x_zp, w, w_zp);
  std::vector<Y> expected;
  const int64_t plane = c.oh() * c.ow();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t oc = (i / plane) % c.cout;
    const float m = numerics::OnnxMultiplier(x_scale, w_scale[per_channel ? oc : 0], y_scale);
    expected.push_back(numerics::RequantizeOnnx<Y>(static_cast<int32_t>(acc[i] + bias[oc]), m, y_zp));
  }
  std::vector<W> w_zp_w(w_zp.begin(), w_zp.end());
  const Tensor wt = T1<W>({c.cout, c.cin / c.group, c.kh, c.kw}, w);
  const Tensor wzt = per_channel ? T1<W>({c.cout}, w_zp_w) : Scalar<W>(w_zp_w[0]);
  const Tensor wst = per_channel ? T1<float>({c.cout}, w_scale) : Scalar<float>(w_scale[0]);
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto out,
      RunOneNode("QLinearConv",
                 {In(T1<X>({c.n, c.cin, c.h, c.w}, x)), Const(Scalar(x_scale)), Const(Scalar<X>(x_zp)),
                  constant_weights ? Const(wt) : In(wt), constant_weights ? Const(wst) : In(wst),
                  constant_weights ? Const(wzt) : In(wzt), In(Scalar(y_scale)), In(Scalar<Y>(y_zp)),
                  In(T1<int32_t>({c.cout}, bias))},
                 c.attrs()));
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{c.n, c.cout, c.oh(), c.ow()}));
  EXPECT_EQ(Values<Y>(out[0]), expected);
}

ConvCase StridedGroupedCase() {
  ConvCase c;
  c.n = 2, c.cin = 4, c.h = 11, c.w = 9, c.cout = 6, c.kh = 3, c.kw = 3, c.group = 2;
  c.stride_h = 2, c.dil_w = 2, c.pads = {1, 2, 1, 0};
  return c;
}

TEST(QLinearConvTest, MatchesNaiveReference) {
  ConvCase c = StridedGroupedCase();
  uint32_t seed = 1;
  for (bool constant : {false, true}) {
    for (bool per_channel : {false, true}) {
      CheckQLinearConv<uint8_t, int8_t, uint8_t>(c, per_channel, constant, seed++);
      CheckQLinearConv<int8_t, int8_t, int8_t>(c, per_channel, constant, seed++);
      CheckQLinearConv<uint8_t, uint8_t, int8_t>(c, per_channel, constant, seed++);  // uint8 weights, zp ~128
    }
  }
  // A larger layer: many pixel blocks across threads, K not a multiple of 4.
  c = ConvCase();
  c.n = 1, c.cin = 17, c.h = 30, c.w = 30, c.cout = 40, c.kh = 3, c.kw = 3, c.pads = {1, 1, 1, 1};
  CheckQLinearConv<uint8_t, int8_t, uint8_t>(c, true, true, 99);
}

TEST(ConvIntegerTest, MatchesNaiveReferenceWithWideWeights) {
  // uint8 weights with zero point 0 do not fit int8 after centring: the portable path.
  const ConvCase c = StridedGroupedCase();
  for (uint32_t seed : {5u, 6u}) {
    std::mt19937 rng(seed);
    const std::vector<uint8_t> x = RandomValues<uint8_t>(rng, c.n * c.cin * c.h * c.w);
    const std::vector<uint8_t> w = RandomValues<uint8_t>(rng, c.cout * (c.cin / c.group) * c.kh * c.kw);
    const uint8_t x_zp = seed == 5 ? 0 : 77;
    const std::vector<int64_t> acc = NaiveConv<uint8_t, uint8_t>(c, x, x_zp, w, {0});
    QFUSE_ASSERT_OK_AND_ASSIGN(
        auto out, RunOneNode("ConvInteger",
                             {In(T1<uint8_t>({c.n, c.cin, c.h, c.w}, x)),
                              seed == 5 ? Const(T1<uint8_t>({c.cout, c.cin / c.group, c.kh, c.kw}, w))
                                        : In(T1<uint8_t>({c.cout, c.cin / c.group, c.kh, c.kw}, w)),
                              In(Scalar<uint8_t>(x_zp))},
                             c.attrs()));
    ASSERT_EQ(out[0].dtype(), ir::DataType::kInt32);
    EXPECT_EQ(Values<int32_t>(out[0]), std::vector<int32_t>(acc.begin(), acc.end()));
  }
}

TEST(ConvIntegerTest, RefusesLayersThatCouldOverflow) {
  // uint8 x (zp 0) x uint8 w (zp 0): 255 * 255 * K > 2^31 - 1 from K = 33026.
  // The bound uses the actual weights (all 255 here) and the full range of x.
  const int64_t k = 33026;
  const Tensor x(ir::DataType::kUint8, {1, k, 1, 1});
  const Tensor w = T1<uint8_t>({1, k, 1, 1}, std::vector<uint8_t>(k, 255));
  absl::StatusOr<std::vector<Tensor>> out = RunOneNode("ConvInteger", {In(x), In(w)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kOutOfRange) << out.status();
  // With constant weights the executor refuses the layer when it is prepared.
  absl::StatusOr<std::unique_ptr<OneNode>> node = OneNode::Create("ConvInteger", {In(x), Const(w)});
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.status().message().find("could overflow"), std::string::npos) << node.status();
  // One product fewer fits.
  QFUSE_EXPECT_OK(RunOneNode("ConvInteger", {In(Tensor(ir::DataType::kUint8, {1, k - 1, 1, 1})),
                                             In(T1<uint8_t>({1, k - 1, 1, 1}, std::vector<uint8_t>(k - 1, 255)))}));
  // Zero weights cannot overflow whatever K.
  QFUSE_EXPECT_OK(RunOneNode("ConvInteger", {In(x), In(Tensor(ir::DataType::kUint8, {1, k, 1, 1}))}));
}

// ---- MatMuls.

TEST(QLinearMatMulTest, BatchedBroadcastPerColumnMatchesNaive) {
  std::mt19937 rng(3);
  const int64_t batch = 3, m = 5, k = 19, n = 21;
  const std::vector<int8_t> a = RandomValues<int8_t>(rng, batch * m * k);
  const std::vector<int8_t> b = RandomValues<int8_t>(rng, k * n);  // [K, N], broadcast over the batch
  const int8_t a_zp = -3;
  std::vector<float> b_scale;
  std::uniform_real_distribution<float> s(0.001f, 0.01f);
  for (int64_t j = 0; j < n; ++j) b_scale.push_back(s(rng));
  const float a_scale = 0.03f, y_scale = 0.07f;
  const int8_t y_zp = 4;
  std::vector<int8_t> expected;
  std::vector<int64_t> acc(m * n);
  for (int64_t bi = 0; bi < batch; ++bi) {
    runtime::reference::IntegerGemm({m, n, k, k, n, n}, a.data() + bi * m * k, {a_zp}, b.data(), {0}, acc.data());
    for (int64_t i = 0; i < m * n; ++i) {
      expected.push_back(numerics::RequantizeOnnx<int8_t>(
          static_cast<int32_t>(acc[i]), numerics::OnnxMultiplier(a_scale, b_scale[i % n], y_scale), y_zp));
    }
  }
  for (bool constant : {false, true}) {
    const Tensor bt = T1<int8_t>({k, n}, b);
    QFUSE_ASSERT_OK_AND_ASSIGN(
        auto out, RunOneNode("QLinearMatMul", {In(T1<int8_t>({batch, m, k}, a)), In(Scalar(a_scale)),
                                               In(Scalar<int8_t>(a_zp)), constant ? Const(bt) : In(bt),
                                               In(T1<float>({n}, b_scale)), In(Scalar<int8_t>(0)), In(Scalar(y_scale)),
                                               In(Scalar<int8_t>(y_zp))}));
    ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{batch, m, n}));
    EXPECT_EQ(Values<int8_t>(out[0]), expected);
  }
}

// Two uint8 activations, as an attention's Q K^T: B of every head packed in the Run, one
// multiplier (the vectorised requantization, rows of 21), against the reference GEMM. B's zero
// point 128 centres it into int8 (the one-pass packing); 0 does not (values up to 255: the
// wide fallback).
TEST(QLinearMatMulTest, TwoActivationsPerTensorScalesMatchNaive) {
  std::mt19937 rng(9);
  const int64_t heads = 6, m = 7, k = 19, n = 21;
  const std::vector<uint8_t> a = RandomValues<uint8_t>(rng, heads * m * k);
  const std::vector<uint8_t> b = RandomValues<uint8_t>(rng, heads * k * n);
  const uint8_t a_zp = 131, y_zp = 120;
  const float a_scale = 0.02f, b_scale = 0.011f, y_scale = 0.9f;
  for (uint8_t b_zp : {uint8_t{128}, uint8_t{0}}) {
    std::vector<uint8_t> expected;
    std::vector<int64_t> acc(m * n);
    for (int64_t h = 0; h < heads; ++h) {
      runtime::reference::IntegerGemm({m, n, k, k, n, n}, a.data() + h * m * k, {a_zp}, b.data() + h * k * n, {b_zp},
                                      acc.data());
      for (int64_t v : acc) {
        expected.push_back(numerics::RequantizeOnnx<uint8_t>(
            static_cast<int32_t>(v), numerics::OnnxMultiplier(a_scale, b_scale, y_scale), y_zp));
      }
    }
    QFUSE_ASSERT_OK_AND_ASSIGN(
        auto out, RunOneNode("QLinearMatMul", {In(T1<uint8_t>({2, 3, m, k}, a)), In(Scalar(a_scale)),
                                               In(Scalar<uint8_t>(a_zp)), In(T1<uint8_t>({2, 3, k, n}, b)),
                                               In(Scalar(b_scale)), In(Scalar<uint8_t>(b_zp)), In(Scalar(y_scale)),
                                               In(Scalar<uint8_t>(y_zp))}));
    ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, m, n}));
    EXPECT_EQ(Values<uint8_t>(out[0]), expected) << "b zero point " << int{b_zp};
  }
}

TEST(QLinearMatMulTest, RoundingTies) {
  // [1,2] x [2,1] with multiplier 0.5: acc 5 -> 2.5 -> 2, acc 7 -> 3.5 -> 4.
  QFUSE_ASSERT_OK_AND_ASSIGN(
      auto out, RunOneNode("QLinearMatMul", {In(T1<uint8_t>({2, 2}, {5, 0, 3, 2})), In(Scalar(1.0f)),
                                             In(Scalar<uint8_t>(0)), In(T1<uint8_t>({2, 1}, {1, 2})), In(Scalar(1.0f)),
                                             In(Scalar<uint8_t>(0)), In(Scalar(2.0f)), In(Scalar<uint8_t>(0))}));
  EXPECT_EQ(Values<uint8_t>(out[0]), (std::vector<uint8_t>{2, 4}));
}

TEST(MatMulIntegerTest, PerRowAndPerColumnZeroPoints) {
  std::mt19937 rng(4);
  const int64_t m = 6, k = 13, n = 10;
  const std::vector<uint8_t> a = RandomValues<uint8_t>(rng, m * k);
  const std::vector<uint8_t> b = RandomValues<uint8_t>(rng, k * n);
  const std::vector<uint8_t> a_zp = RandomValues<uint8_t>(rng, m);
  const std::vector<uint8_t> b_zp = RandomValues<uint8_t>(rng, n);
  std::vector<int64_t> acc(m * n);
  runtime::reference::IntegerGemm({m, n, k, k, n, n}, a.data(), std::vector<int32_t>(a_zp.begin(), a_zp.end()), b.data(),
                                  std::vector<int32_t>(b_zp.begin(), b_zp.end()), acc.data());
  const std::vector<int32_t> expected(acc.begin(), acc.end());
  QFUSE_ASSERT_OK_AND_ASSIGN(auto out, RunOneNode("MatMulInteger", {In(T1<uint8_t>({m, k}, a)), In(T1<uint8_t>({k, n}, b)),
                                                                    In(T1<uint8_t>({m}, a_zp)),
                                                                    In(T1<uint8_t>({n}, b_zp))}));
  EXPECT_EQ(Values<int32_t>(out[0]), expected);
  // 1-D A: [K] x [K, N] -> [N].
  QFUSE_ASSERT_OK_AND_ASSIGN(out, RunOneNode("MatMulInteger", {In(T1<uint8_t>({3}, {1, 2, 3})),
                                                               In(T1<int8_t>({3, 2}, {1, -1, 2, -2, 3, -3}))}));
  EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{14, -14}));
}

// K = 0: every sum is empty, so MatMulInteger gives zeros and QLinearMatMul the output zero
// point (ONNX MatMul semantics), with B a graph input or a constant, batched or not.
TEST(IntegerMatMulTest, EmptyInnerDimensionGivesZeroSums) {
  for (bool constant_b : {false, true}) {
    const auto b_input = [&](Tensor t) { return constant_b ? Const(std::move(t)) : In(std::move(t)); };
    QFUSE_ASSERT_OK_AND_ASSIGN(auto out, RunOneNode("MatMulInteger", {In(T1<uint8_t>({2, 3, 0}, {})),
                                                                      b_input(T1<int8_t>({0, 4}, {}))}));
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(Values<int32_t>(out[0]), std::vector<int32_t>(24, 0)) << "constant B " << constant_b;
    QFUSE_ASSERT_OK_AND_ASSIGN(
        out, RunOneNode("QLinearMatMul", {In(T1<uint8_t>({3, 0}, {})), In(Scalar(0.5f)), In(Scalar<uint8_t>(7)),
                                          b_input(T1<uint8_t>({2, 0, 2}, {})), In(Scalar(0.25f)),
                                          In(Scalar<uint8_t>(3)), In(Scalar(2.0f)), In(Scalar<uint8_t>(41))}));
    EXPECT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(Values<uint8_t>(out[0]), std::vector<uint8_t>(12, 41)) << "constant B " << constant_b;
  }
}

}  // namespace
}  // namespace qfuse::testing
