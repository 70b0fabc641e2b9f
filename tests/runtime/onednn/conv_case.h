// A 2-D convolution case of the oneDNN integer tests (source_split_test, float_exact_conv_test):
// its shape, random uint8 source and int8 weight bytes, the reference convolution's
// parameters and the kernels' attributes, and NCHW -> NHWC byte copies.
#ifndef QFUSE_TESTS_RUNTIME_ONEDNN_CONV_CASE_H_
#define QFUSE_TESTS_RUNTIME_ONEDNN_CONV_CASE_H_

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "ir/tensor.h"
#include "runtime/kernels/linalg/conv_attrs.h"
#include "runtime/reference/conv.h"

namespace qfuse::testing {

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group, stride, dilation, pad_begin, pad_end;
};

inline ir::Tensor Bytes(ir::DataType type, const std::vector<int64_t>& dims, const std::vector<uint8_t>& v) {
  ir::Tensor t = ir::Tensor::CreateUninitialized(type, dims).value();
  std::copy(v.begin(), v.end(), static_cast<uint8_t*>(t.raw_data()));
  return t;
}

// NCHW bytes of k's source as channels-last.
inline std::vector<uint8_t> ToNhwc(const std::vector<uint8_t>& x, const ConvCase& k) {
  std::vector<uint8_t> out(x.size());
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t c = 0; c < k.c; ++c)
      for (int64_t i = 0; i < k.h * k.w; ++i) out[(n * k.h * k.w + i) * k.c + c] = x[(n * k.c + c) * k.h * k.w + i];
  return out;
}

// Random source bytes (NCHW) and INT8 weights [m, c / group, kh, kw] whose first value is -128.
struct ConvData {
  std::vector<uint8_t> x;
  ir::Tensor weights;
};
inline ConvData RandomConvData(const ConvCase& k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  ConvData d;
  d.x.resize(static_cast<size_t>(k.n * k.c * k.h * k.w));
  std::vector<uint8_t> w(static_cast<size_t>(k.m * (k.c / k.group) * k.kh * k.kw));
  for (uint8_t& v : d.x) v = static_cast<uint8_t>(byte(rng));
  for (uint8_t& v : w) v = static_cast<uint8_t>(byte(rng));
  w[0] = 0x80;
  d.weights = Bytes(ir::DataType::kInt8, {k.m, k.c / k.group, k.kh, k.kw}, w);
  return d;
}

inline runtime::reference::ConvParams ReferenceParams(const ConvCase& k) {
  runtime::reference::ConvParams params;
  params.group = k.group;
  params.strides = {k.stride, k.stride};
  params.dilations = {k.dilation, k.dilation};
  params.pads = {k.pad_begin, k.pad_begin, k.pad_end, k.pad_end};
  return params;
}

inline runtime::kernels::linalg::ConvAttrs KernelAttrs(const ConvCase& k) {
  runtime::kernels::linalg::ConvAttrs attrs;
  attrs.group = k.group;
  attrs.strides = {k.stride, k.stride};
  attrs.dilations = {k.dilation, k.dilation};
  attrs.pads = {k.pad_begin, k.pad_begin, k.pad_end, k.pad_end};
  return attrs;
}

}  // namespace qfuse::testing

#endif  // QFUSE_TESTS_RUNTIME_ONEDNN_CONV_CASE_H_
