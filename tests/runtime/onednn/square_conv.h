// A 2-D Conv with a bias on a square QDQ input, as the oneDNN integer-unit tests build it:
// pads kernel / 2 on every side, equal strides, groups.
#ifndef QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_
#define QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_

#include <cstdint>
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

}  // namespace qfuse::runtime::onednn

#endif  // QFUSE_TESTS_RUNTIME_ONEDNN_SQUARE_CONV_H_
