// The channels-last integer conv tiles against the scalar reference accumulators
// (runtime/reference/conv.h) under every ISA cap this CPU supports: strides, pads, dilations,
// groups, depthwise and pointwise convs, INT8/UINT8 activations and weights, per-channel weight
// zero points, values drawn from the type limits so accumulators reach their extremes.
#include "runtime/kernels/quant/nhwc_conv.h"

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/reference/conv.h"
#include "runtime/thread_pool.h"
#include "tests/testing/isa_cap_guard.h"

namespace qfuse::runtime::kernels::quant {
namespace {

struct Case {
  int64_t batch, cin, h, w, cout, kh, kw, stride, pad, dilation, group;
  int64_t stride_w = 0;  // 0: `stride` along W too
  int64_t StrideW() const { return stride_w == 0 ? stride : stride_w; }
};

// Mostly the type's extremes, otherwise uniform.
uint8_t DrawByte(std::mt19937& rng, bool is_signed) {
  std::uniform_int_distribution<int> pick(0, 3), any(0, 255);
  const int lo = is_signed ? 0x80 : 0, hi = is_signed ? 0x7F : 0xFF;
  switch (pick(rng)) {
    case 0: return static_cast<uint8_t>(lo);
    case 1: return static_cast<uint8_t>(hi);
    default: return static_cast<uint8_t>(any(rng));
  }
}

ir::Tensor RandomBytes(std::mt19937& rng, ir::DataType type, std::vector<int64_t> dims) {
  ir::Tensor t = ir::Tensor::Create(type, std::move(dims)).value();
  auto* d = static_cast<uint8_t*>(t.raw_data());
  for (int64_t i = 0; i < t.num_elements(); ++i) d[i] = DrawByte(rng, type == ir::DataType::kInt8);
  return t;
}

void Check(const Case& c, ir::DataType x_type, ir::DataType w_type, bool per_channel_zp, uint32_t seed) {
  std::mt19937 rng(seed);
  const ir::Tensor x = RandomBytes(rng, x_type, {c.batch, c.cin, c.h, c.w});
  const ir::Tensor w = RandomBytes(rng, w_type, {c.cout, c.cin / c.group, c.kh, c.kw});
  const bool x_signed = x_type == ir::DataType::kInt8;
  const int32_t x_zp = x_signed ? -3 : 131;
  std::vector<int32_t> w_zps = {w_type == ir::DataType::kInt8 ? 0 : 128};
  if (per_channel_zp) {
    w_zps.clear();
    // Depthwise with uint8 weights: zero points 0 and 255 too, so centred weights reach +-255.
    const bool depthwise = c.group == c.cin && c.cout == c.cin;
    for (int64_t oc = 0; oc < c.cout; ++oc) {
      const int32_t extreme = oc % 3 == 0 ? 0 : 255;
      w_zps.push_back(w_type == ir::DataType::kInt8 ? int32_t(oc % 5) - 2
                      : depthwise && oc % 3 != 2 ? extreme
                                                 : 120 + int32_t(oc % 7));
    }
  }
  reference::ConvParams params;
  params.group = c.group;
  params.strides = {c.stride, c.StrideW()};
  params.dilations = {c.dilation, c.dilation};
  params.pads = {c.pad, c.pad, c.pad, c.pad};
  const ir::Tensor want = reference::ConvIntegerAccumulators(x, x_zp, w, w_zps, params).value();
  const int64_t oh = want.dims()[2], ow = want.dims()[3];

  // x in channels-last order.
  std::vector<uint8_t> x_nhwc(x.num_elements());
  const auto* xd = static_cast<const uint8_t*>(x.raw_data());
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ch = 0; ch < c.cin; ++ch)
      for (int64_t i = 0; i < c.h * c.w; ++i)
        x_nhwc[(n * c.h * c.w + i) * c.cin + ch] = xd[(n * c.cin + ch) * c.h * c.w + i];

  const NhwcConvWeights prepared = PrepareNhwcConvWeights(w, c.group, w_zps);
  linalg::ConvAttrs attrs;
  attrs.group = c.group;
  attrs.strides = {c.stride, c.StrideW()};
  attrs.dilations = {c.dilation, c.dilation};
  attrs.pads = {c.pad, c.pad, c.pad, c.pad};
  const linalg::ConvGeometry g = linalg::ResolveConv(attrs, {c.h, c.w}, {c.kh, c.kw}).value();
  ASSERT_EQ(g.col[1], oh);
  ASSERT_EQ(g.col[2], ow);
  ThreadPool pool(2);
  testing::IsaCapGuard guard;
  for (Isa cap : {Isa::kScalar, Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni}) {
    if (cap > DetectedIsa()) continue;
    SetIsaCap(cap);
    NhwcConvArgs args;
    args.geometry = &g;
    args.x = x_nhwc.data();
    args.x_signed = x_signed;
    args.x_zero_point = x_zp;
    args.batch = c.batch;
    args.pool = &pool;
    std::vector<int32_t> got(c.batch * oh * ow * c.cout, 0x5A5A5A5A);
    ForEachNhwcConvTile(args, prepared, [&](int64_t p0, int64_t p1, const int32_t* acc) {
      std::copy(acc, acc + (p1 - p0) * c.cout, got.begin() + p0 * c.cout);
    });
    const int64_t* wd = want.data<int64_t>();
    int mismatches = 0;
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oc = 0; oc < c.cout; ++oc)
        for (int64_t p = 0; p < oh * ow; ++p) {
          const int64_t ref = wd[(n * c.cout + oc) * oh * ow + p];
          const int32_t v = got[(n * oh * ow + p) * c.cout + oc];
          if (v != ref && ++mismatches <= 3) {
            ADD_FAILURE() << "cap " << IsaName(cap) << " n " << n << " oc " << oc << " pixel " << p << ": " << v
                          << " != " << ref;
          }
        }
    EXPECT_EQ(mismatches, 0) << "cap " << IsaName(cap);
  }
}

const Case kCases[] = {
    {2, 16, 9, 9, 24, 1, 1, 1, 0, 1, 1},       // pointwise: rows read in place
    {1, 13, 7, 6, 19, 1, 1, 2, 0, 1, 1},       // strided 1x1, odd channel counts
    {2, 8, 10, 11, 33, 3, 3, 1, 1, 1, 1},      // 3x3 padded
    {1, 3, 15, 15, 16, 3, 3, 2, 1, 1, 1},      // stem: 3 input channels, stride 2
    {1, 12, 9, 9, 12, 3, 3, 1, 2, 2, 1},       // dilation
    {2, 12, 8, 8, 18, 3, 3, 1, 1, 1, 3},       // groups
    {2, 40, 9, 9, 40, 3, 3, 1, 1, 1, 40},      // depthwise (8-channel blocks + tail)
    {1, 19, 12, 12, 19, 3, 3, 2, 1, 1, 19},    // depthwise, stride 2, tail only partly vector
    {1, 8, 7, 7, 8, 5, 5, 1, 2, 1, 8},         // depthwise 5x5
    {2, 56, 8, 8, 56, 2, 2, 1, 0, 1, 56},      // depthwise 2x2 (even taps), 3 blocks of 16 + 8
    {1, 32, 9, 9, 32, 3, 3, 2, 1, 1, 32},      // depthwise 3x3 stride 2, blocks of 16 only
    {2, 24, 11, 10, 24, 3, 3, 1, 2, 2, 24},    // depthwise dilated: interior taps by offsets
    {2, 48, 7, 12, 48, 3, 3, 1, 1, 1, 48},     // depthwise, blocks of 16: four pixels at once, then singles
    {1, 32, 9, 21, 32, 3, 3, 2, 1, 1, 32},     // the same with stride 2 (pixels a stride apart)
    {1, 16, 5, 6, 16, 3, 3, 1, 0, 1, 16},      // 3x3 quads reading the image's last column, stride 1
    {1, 32, 5, 9, 32, 3, 3, 2, 0, 1, 32},      // ... and stride 2
    {1, 32, 9, 13, 32, 3, 3, 2, 1, 1, 32, 1},  // 3x3 quads, stride 2 along H and 1 along W
    {1, 16, 8, 17, 16, 3, 3, 1, 1, 1, 16, 2},  // ... 1 along H and 2 along W
    {1, 16, 7, 20, 16, 3, 3, 1, 1, 1, 16, 3},  // W stride 3: pixel quads with tap pairs
    {1, 64, 9, 14, 64, 3, 3, 2, 1, 1, 64},     // 3x3 quads, four blocks of 16 channels, stride 2
    {3, 64, 14, 14, 96, 1, 1, 1, 0, 1, 1},     // several tiles per image
};

// The pair-dot form each cap gives the depthwise tiles (the sums above are the same for all,
// so this is what shows that each form ran): vpdpwssd's EVEX form wherever AVX-512 VNNI is
// allowed, its VEX form at avx2_vnni on a CPU with AVX-VNNI, vpmaddwd otherwise (avx512 stands
// for Skylake-SP, without VNNI).
TEST(NhwcConvTest, EachCapTakesItsPairDotForm) {
  testing::IsaCapGuard guard;
  for (Isa cap : {Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAvx512Vnni}) {
    if (cap > DetectedIsa()) continue;
    SetIsaCap(cap);
    const std::string want = cap == Isa::kAvx512Vnni                      ? "vpdpwssd (EVEX)"
                             : cap == Isa::kAvx2Vnni && CpuHasAvxVnni() ? "vpdpwssd (VEX)"
                                                                         : "vpmaddwd";
    EXPECT_EQ(DepthwisePairDotName(), want) << "cap " << IsaName(cap);
  }
}

TEST(NhwcConvTest, EqualsReferenceAccumulatorsUnderEveryCap) {
  uint32_t seed = 1;
  for (const Case& c : kCases) {
    for (ir::DataType x_type : {ir::DataType::kInt8, ir::DataType::kUint8}) {
      for (ir::DataType w_type : {ir::DataType::kInt8, ir::DataType::kUint8}) {
        for (bool per_channel : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "case " << (&c - kCases) << " x " << ir::DataTypeName(x_type) << " w "
                                            << ir::DataTypeName(w_type) << " per-channel " << per_channel);
          Check(c, x_type, w_type, per_channel, seed++);
        }
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
