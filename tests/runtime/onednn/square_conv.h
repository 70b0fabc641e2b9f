// A 2-D Conv with a bias on a square QDQ input, as the oneDNN integer-unit tests build it:
// pads kernel / 2 on every side, equal strides, groups; and random conv weights.
#ifndef QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_
#define QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/testing/qdq_graph.h"

namespace qfuse::runtime::onednn {

struct SquareConv {
  int64_t n = 0, cin = 0, cout = 0, size = 0, kernel = 0, stride = 1, group = 1;
};

// Conv(x, DQ(w), DQ(bias)) for x of dims [n, cin, size, size] with int8 weights `w`
// ([cout, cin / group, kernel, kernel]) and int32 `bias`, scales per output channel (or one);
// *out_dims gets the output's dims.
inline ir::Value* AddSquareConv(testing::QdqGraph& b, ir::Value* x, const SquareConv& c, const std::vector<int8_t>& w,
                                const std::vector<float>& w_scales, const std::vector<int32_t>& bias,
                                const std::vector<float>& bias_scales, std::vector<int64_t>* out_dims) {
  ir::AttributeMap attrs;
  const int64_t pad = c.kernel / 2;
  attrs.Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  attrs.Set("strides", std::vector<int64_t>{c.stride, c.stride});
  attrs.Set("group", c.group);
  const int64_t out_size = (c.size + 2 * pad - c.kernel) / c.stride + 1;
  *out_dims = {c.n, c.cout, out_size, out_size};
  return b.Op("Conv",
              {x, b.Weights("w", {c.cout, c.cin / c.group, c.kernel, c.kernel}, w, w_scales, 0),
               b.Bias("bias", bias, bias_scales)},
              *out_dims, attrs);
}

// Conv weights [o, i, k, k] of random int8 values in [-127, 127] (drawn from rng), one scale
// per output channel.
inline ir::Value* RandomWeights(testing::QdqGraph& b, std::mt19937& rng, const std::string& name, int64_t o,
                                int64_t i, int64_t k, float scale = 0.004f) {
  std::uniform_int_distribution<int> w8(-127, 127);
  std::vector<int8_t> v(static_cast<size_t>(o * i * k * k));
  for (int8_t& e : v) e = static_cast<int8_t>(w8(rng));
  return b.Weights(name, {o, i, k, k}, v, std::vector<float>(static_cast<size_t>(o), scale), 0);
}

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_
