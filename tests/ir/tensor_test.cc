// ir::Tensor's buffers: zero-filled or uninitialized with the alignment padding cleared, and
// the buffer cache (ir/tensor.cc) handing a freed buffer of 64 KiB or more to a later tensor
// of its size or down to an eighth of it, never to a smaller one, and never shared by two
// live tensors; a live set beyond 256 MiB cached whole until trimmed.
#include "ir/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace qfuse::ir {
namespace {

// A float tensor of n elements whose every byte is 0xAB.
Tensor Filled(int64_t n) {
  Tensor t = Tensor::Uninitialized(DataType::kFloat32, {n});
  std::memset(t.raw_data(), 0xAB, t.byte_size());
  return t;
}

TEST(TensorTest, ZeroFilledTensorsAreZeroEvenInReusedBuffers) {
  const void* freed = nullptr;
  {
    Tensor big = Filled(256 << 10);  // 1 MiB
    freed = big.raw_data();
  }
  // A tensor of three quarters of the size takes the freed buffer (dirty bytes) and must
  // still read as zeros.
  Tensor zeros(DataType::kFloat32, {192 << 10});
  EXPECT_EQ(zeros.raw_data(), freed);
  for (float v : zeros.values<float>()) ASSERT_EQ(v, 0.f);
}

TEST(TensorTest, FreedBuffersServeTheirSizeDownToAnEighthOfIt) {
  const void* freed = nullptr;
  {
    Tensor big = Filled(256 << 10);  // 1 MiB (plus the alignment padding)
    freed = big.raw_data();
  }
  // Less than an eighth of the size (112 KiB): a buffer of its own.
  Tensor small = Tensor::Uninitialized(DataType::kFloat32, {28 << 10});
  EXPECT_NE(small.raw_data(), freed);
  // A quarter (256 KiB): the freed 1 MiB buffer.
  {
    Tensor quarter = Tensor::Uninitialized(DataType::kFloat32, {64 << 10});
    EXPECT_EQ(quarter.raw_data(), freed);
  }
  // Three quarters: the same buffer again once the quarter is freed, its padding after the
  // elements cleared.
  Tensor reused = Tensor::Uninitialized(DataType::kFloat32, {192 << 10});
  EXPECT_EQ(reused.raw_data(), freed);
  // While `reused` lives, the buffer is not handed out again.
  Tensor other = Tensor::Uninitialized(DataType::kFloat32, {192 << 10});
  EXPECT_NE(other.raw_data(), reused.raw_data());
  // Writing the whole of each tensor leaves the other intact.
  std::memset(reused.raw_data(), 0x11, reused.byte_size());
  std::memset(other.raw_data(), 0x22, other.byte_size());
  EXPECT_EQ(static_cast<const uint8_t*>(reused.raw_data())[reused.byte_size() - 1], 0x11);
  EXPECT_EQ(static_cast<const uint8_t*>(other.raw_data())[0], 0x22);
}

// A live set beyond the cache's fixed 256 MiB (a large batch of a 320x320 model) stays cached
// whole, so the next run reuses every buffer instead of faulting in fresh pages; a trim gives
// back what is kept beyond 256 MiB.
TEST(TensorTest, LargeLiveSetsStayCachedUntilTrimmed) {
  constexpr size_t kMiB = size_t{1} << 20;
  TrimTensorBufferCache();
  const size_t before = CachedTensorBufferBytes();
  ASSERT_LE(before, 256 * kMiB);
  constexpr int64_t kElements = int64_t{30} << 20;  // 120 MiB of floats
  std::vector<const void*> freed;
  {
    std::vector<Tensor> live;
    for (int i = 0; i < 3; ++i) live.push_back(Tensor::Uninitialized(DataType::kFloat32, {kElements}));
    for (const Tensor& t : live) freed.push_back(t.raw_data());
  }
  EXPECT_GE(CachedTensorBufferBytes(), before + 360 * kMiB);
  {
    std::vector<Tensor> again;
    for (int i = 0; i < 3; ++i) again.push_back(Tensor::Uninitialized(DataType::kFloat32, {kElements}));
    for (const Tensor& t : again) EXPECT_NE(std::find(freed.begin(), freed.end(), t.raw_data()), freed.end());
  }
  TrimTensorBufferCache();
  EXPECT_LE(CachedTensorBufferBytes(), 256 * kMiB);
}

TEST(TensorTest, CopiesOwnTheirBuffer) {
  Tensor a = Filled(64 << 10);
  Tensor b = a;
  EXPECT_NE(a.raw_data(), b.raw_data());
  EXPECT_TRUE(a.BitwiseEqual(b));
  std::memset(b.raw_data(), 0, b.byte_size());
  EXPECT_FALSE(a.BitwiseEqual(b));
}

}  // namespace
}  // namespace qfuse::ir
