// ir::Tensor's buffers: zero-filled or uninitialized with the alignment padding cleared, and
// the buffer cache (ir/tensor.cc) handing a freed buffer of 64 KiB or more to a later tensor
// of its size or down to an eighth of it, never to a smaller one, and never shared by two
// live tensors.
#include "ir/tensor.h"

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
