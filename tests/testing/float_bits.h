// Float32 values as their bit patterns and back, for tests that compare outputs bit for bit
// (a reference's values written as hex, e.g. onnxruntime's own outputs).
#ifndef QFUSE_TESTS_TESTING_FLOAT_BITS_H_
#define QFUSE_TESTS_TESTING_FLOAT_BITS_H_

#include <cstdint>
#include <vector>

#include "absl/base/casts.h"

namespace qfuse::testing {

inline uint32_t Bits(float f) { return absl::bit_cast<uint32_t>(f); }

inline std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> b;
  for (float f : v) b.push_back(Bits(f));
  return b;
}

inline std::vector<float> Floats(const std::vector<uint32_t>& bits) {
  std::vector<float> v;
  for (uint32_t b : bits) v.push_back(absl::bit_cast<float>(b));
  return v;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_TESTING_FLOAT_BITS_H_
