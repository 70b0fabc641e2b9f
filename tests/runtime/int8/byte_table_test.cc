// LookupBytes under every ISA cap this CPU has gives table[x] for every byte value, at
// lengths around the 32-byte vector width and at offsets off its alignment.
#include "runtime/int8/byte_table.h"

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/cpu_isa.h"
#include "tests/testing/isa_cap_guard.h"

namespace qfuse::runtime::int8 {
namespace {

TEST(ByteTableTest, EveryCapGivesTheTablesBytes) {
  testing::IsaCapGuard guard;
  std::mt19937 rng(11);
  std::array<uint8_t, 256> table{};
  for (uint8_t& v : table) v = static_cast<uint8_t>(rng());
  std::vector<uint8_t> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i < 256 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(rng());
  int checked = 0;
  for (Isa cap : {Isa::kScalar, Isa::kAvx2}) {
    if (cap > DetectedIsa()) continue;
    SetIsaCap(cap);
    for (int64_t offset : {0, 1, 7}) {
      for (int64_t n : {0, 1, 31, 32, 33, 64, 255, 256, 993}) {
        std::vector<uint8_t> y(static_cast<size_t>(n) + 1, 0xA5);
        LookupBytes(table, x.data() + offset, n, y.data());
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(y[i], table[x[offset + i]]) << "cap " << IsaName(cap) << " n " << n << " i " << i;
        }
        ASSERT_EQ(y[n], 0xA5) << "wrote past the end, cap " << IsaName(cap) << " n " << n;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 27);
}

}  // namespace
}  // namespace qfuse::runtime::int8
