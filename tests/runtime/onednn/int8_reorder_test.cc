// ReorderInt8 (runtime/onednn/onednn_engine.h) against a direct loop, on each of its paths:
// one channel or one pixel (the bytes copied), both sides at least 16 (qfuse's tiles), and a
// side below 16 (oneDNN's reorder, kept after its first call, so every shape runs twice), for
// INT8 and UINT8 and both directions, on 1 and 2 threads.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "runtime/onednn/onednn_engine.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::onednn {
namespace {

// NCHW bytes of dims d as NHWC (to_last) or NHWC bytes as NCHW.
std::vector<uint8_t> Expected(const std::vector<uint8_t>& src, const std::vector<int64_t>& d, bool to_last) {
  const int64_t n = d[0], c = d[1], hw = d[2] * d[3];
  std::vector<uint8_t> out(src.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (i * c + ch) * hw + p, last = (i * hw + p) * c + ch;
        if (to_last) {
          out[last] = src[plain];
        } else {
          out[plain] = src[last];
        }
      }
    }
  }
  return out;
}

TEST(ReorderInt8Test, EveryPathGivesTheTransposedBytes) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 1, 5, 7},    {3, 40, 1, 1},  // the same bytes in both orders
                                                    {1, 20, 16, 17}, {2, 96, 4, 4},  // tiles
                                                    {2, 3, 5, 7},    {1, 3, 32, 32}, {2, 40, 3, 3}};  // oneDNN
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (ir::DataType type : {ir::DataType::kUint8, ir::DataType::kInt8}) {
      for (const std::vector<int64_t>& d : shapes) {
        const int64_t bytes = d[0] * d[1] * d[2] * d[3];
        for (bool src_last : {false, true}) {
          const std::vector<int64_t> src_dims = src_last ? std::vector<int64_t>{d[0], d[2], d[3], d[1]} : d;
          ir::Tensor src = ir::Tensor::CreateUninitialized(type, src_dims).value();
          auto* s = static_cast<uint8_t*>(src.raw_data());
          for (int64_t i = 0; i < bytes; ++i) s[i] = static_cast<uint8_t>(i * 37 + 11);
          const std::vector<uint8_t> want = Expected(std::vector<uint8_t>(s, s + bytes), d, !src_last);
          for (int call = 0; call < 2; ++call) {
            std::vector<uint8_t> got(static_cast<size_t>(bytes), 0xAA);
            ReorderInt8(pool, src, src_last, d, got.data());
            EXPECT_EQ(got, want) << d[0] << "x" << d[1] << "x" << d[2] << "x" << d[3]
                                 << (src_last ? " NHWC>NCHW" : " NCHW>NHWC") << " threads " << threads << " call "
                                 << call;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn
