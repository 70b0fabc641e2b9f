// NhwcMaxPool against a direct loop over each window (written out here), for UINT8 and INT8
// bytes, under every ISA cap the CPU has (AVX-512BW rows, AVX2 rows, scalar): channel counts
// that leave tails of every length, strides, paddings, ceil-mode last windows, one and two
// threads; and the refusal of windows outside the image.
#include "runtime/kernels/quant/nhwc_max_pool.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "runtime/thread_pool.h"
#include "tests/testing/isa_cap_guard.h"

namespace qfuse::runtime::kernels::quant {
namespace {

std::vector<uint8_t> Reference(const NhwcMaxPoolShape& s, bool is_signed, const std::vector<uint8_t>& x) {
  std::vector<uint8_t> y(static_cast<size_t>(s.n * s.oh * s.ow * s.c));
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oy = 0; oy < s.oh; ++oy)
      for (int64_t ox = 0; ox < s.ow; ++ox)
        for (int64_t c = 0; c < s.c; ++c) {
          int best = -1000;
          for (int64_t ky = 0; ky < s.kh; ++ky)
            for (int64_t kx = 0; kx < s.kw; ++kx) {
              const int64_t iy = oy * s.sh - s.pad_top + ky, ix = ox * s.sw - s.pad_left + kx;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              const uint8_t b = x[((n * s.h + iy) * s.w + ix) * s.c + c];
              best = std::max(best, is_signed ? int{static_cast<int8_t>(b)} : int{b});
            }
          y[((n * s.oh + oy) * s.ow + ox) * s.c + c] = static_cast<uint8_t>(best);
        }
  return y;
}

struct Case {
  int64_t h, w, k, stride, pad, extra_end;  // extra_end: ceil mode's extra output (0 or 1)
};

TEST(NhwcMaxPoolTest, EqualsTheDirectLoopOnEveryIsaPath) {
  testing::IsaCapGuard guard;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  const ThreadPool two(2);
  int checked = 0;
  for (Isa cap : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    if (cap > DetectedIsa()) continue;
    SetIsaCap(cap);
    for (const Case& k : {Case{9, 11, 3, 2, 1, 0}, Case{8, 8, 3, 1, 1, 0}, Case{7, 10, 3, 2, 0, 1},
                          Case{6, 6, 2, 2, 0, 0}, Case{5, 4, 3, 1, 0, 0}, Case{13, 9, 3, 2, 0, 1}}) {
      for (int64_t c : {1, 7, 31, 32, 33, 63, 64, 65, 100, 129}) {
        NhwcMaxPoolShape s;
        s.n = 2, s.h = k.h, s.w = k.w, s.c = c, s.kh = s.kw = k.k, s.sh = s.sw = k.stride;
        s.pad_top = s.pad_left = k.pad;
        s.oh = (k.h + 2 * k.pad - k.k) / k.stride + 1 + k.extra_end;
        s.ow = (k.w + 2 * k.pad - k.k) / k.stride + 1 + k.extra_end;
        ASSERT_TRUE(EveryWindowTouchesTheImage(s));
        std::vector<uint8_t> x(static_cast<size_t>(s.n * s.h * s.w * c));
        for (uint8_t& v : x) v = static_cast<uint8_t>(byte(rng));
        for (bool is_signed : {false, true}) {
          const std::vector<uint8_t> want = Reference(s, is_signed, x);
          for (const ThreadPool* pool : {static_cast<const ThreadPool*>(nullptr), &two}) {
            std::vector<uint8_t> got(want.size(), 0xEE);
            ASSERT_TRUE(NhwcMaxPool(s, is_signed, x.data(), got.data(), pool).ok());
            ASSERT_EQ(got, want) << IsaName(cap) << " c " << c << " h " << k.h << " k " << k.k << " stride " << k.stride
                                 << (is_signed ? " int8" : " uint8");
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

// Non-square windows and strides with uneven paddings: the two axes must not be mixed up.
TEST(NhwcMaxPoolTest, NonSquareWindowsAndUnevenPads) {
  testing::IsaCapGuard guard;
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> byte(0, 255);
  for (Isa cap : {Isa::kAvx512, Isa::kAvx2, Isa::kScalar}) {
    if (cap > DetectedIsa()) continue;
    SetIsaCap(cap);
    NhwcMaxPoolShape s;
    s.n = 2, s.h = 11, s.w = 8, s.c = 70;
    s.kh = 3, s.kw = 2, s.sh = 2, s.sw = 1, s.pad_top = 1, s.pad_left = 0;
    s.oh = (11 + 1 + 0 - 3) / 2 + 1, s.ow = (8 + 0 + 1 - 2) / 1 + 1;  // end pads 0 (h) and 1 (w)
    ASSERT_TRUE(EveryWindowTouchesTheImage(s));
    std::vector<uint8_t> x(static_cast<size_t>(s.n * s.h * s.w * s.c));
    for (uint8_t& v : x) v = static_cast<uint8_t>(byte(rng));
    for (bool is_signed : {false, true}) {
      std::vector<uint8_t> got(static_cast<size_t>(s.n * s.oh * s.ow * s.c));
      ASSERT_TRUE(NhwcMaxPool(s, is_signed, x.data(), got.data(), nullptr).ok());
      EXPECT_EQ(got, Reference(s, is_signed, x)) << IsaName(cap) << (is_signed ? " int8" : " uint8");
    }
  }
}

TEST(NhwcMaxPoolTest, RefusesWindowsOutsideTheImage) {
  NhwcMaxPoolShape s;
  s.n = 1, s.h = 4, s.w = 4, s.c = 8, s.kh = s.kw = 2, s.sh = s.sw = 2, s.oh = s.ow = 2;
  EXPECT_TRUE(EveryWindowTouchesTheImage(s));
  s.oh = 3;  // the third row of windows starts at 4, past the image
  EXPECT_FALSE(EveryWindowTouchesTheImage(s));
  std::vector<uint8_t> x(128), y(128);
  EXPECT_FALSE(NhwcMaxPool(s, false, x.data(), y.data(), nullptr).ok());
  s.oh = 2;
  s.pad_top = 2;  // the first window lies wholly in the padding
  EXPECT_FALSE(EveryWindowTouchesTheImage(s));
  s.pad_top = 0;
  s.ow = 3;  // the third column of windows starts at 4, past the image
  EXPECT_FALSE(EveryWindowTouchesTheImage(s));
  s.ow = 2;
  s.pad_left = 2;  // the first column of windows lies wholly in the padding
  EXPECT_FALSE(EveryWindowTouchesTheImage(s));
  s.pad_left = 0;
  s.c = 0;
  EXPECT_FALSE(EveryWindowTouchesTheImage(s));
}

}  // namespace
}  // namespace qfuse::runtime::kernels::quant
