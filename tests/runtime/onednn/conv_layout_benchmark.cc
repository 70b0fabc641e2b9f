// Times oneDNN's float convolution in the two forms runtime/onednn/conv_kernel.cc chooses
// between: the channel-blocked layout's direct kernel (nChw16c in and out) and brgconv on
// channels-last copies (the blocked input reordered to nhwc, the convolution, the result
// reordered back, all three timed). Eight copies of the weights are used in turn, so that
// each run reads its weights from memory as a whole network does. Prints the median of 200
// runs in ms and the ratio channels-last / blocked. Run by hand:
//   bazel run -c opt //tests/runtime/onednn:conv_layout_benchmark
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "runtime/onednn/onednn_engine.h"
#include "runtime/thread_pool.h"

namespace qfuse::runtime::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Shape {
  const char* name;
  int64_t batch, in_channels, out_channels, size, kernel, stride;
};

constexpr Shape kShapes[] = {
    {"ResNet-18 224 layer1 3x3", 1, 64, 64, 56, 3, 1},        {"ResNet-18 224 layer2 3x3", 1, 128, 128, 28, 3, 1},
    {"ResNet-18 224 layer3 3x3", 1, 256, 256, 14, 3, 1},      {"ResNet-18 224 layer4 3x3", 1, 512, 512, 7, 3, 1},
    {"ResNet-18 224 layer4.0 3x3 s2", 1, 256, 512, 14, 3, 2}, {"ResNet-18 128 layer3 3x3", 1, 256, 256, 8, 3, 1},
    {"ResNet-18 128 layer4 3x3", 1, 512, 512, 4, 3, 1},       {"ResNet-18 128 layer4 3x3 b2", 2, 512, 512, 4, 3, 1},
    {"ResNet-18 128 layer4 3x3 b8", 8, 512, 512, 4, 3, 1},    {"ResNet-18 224 layer4 3x3 b16", 16, 512, 512, 7, 3, 1},
    {"DenseNet 3x3 128->32 14x14", 1, 128, 32, 14, 3, 1},     {"GoogLeNet 3x3 160->320 7x7", 1, 160, 320, 7, 3, 1},
    {"ResNet-50 1x1 2048->512 7x7", 1, 2048, 512, 7, 1, 1},   {"ResNet-50 1x1 1024->256 14x14", 1, 1024, 256, 14, 1, 1},
};

// Median milliseconds of `runs` calls of fn(run index).
template <typename Fn>
double MedianMs(Fn fn, int runs) {
  for (int r = 0; r < 10; ++r) fn(r);
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(r);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + runs / 2, ms.end());
  return ms[runs / 2];
}

// The median time of one form: `layout` nChw16c (blocked, the direct kernel) or nhwc (with
// the reorders from and to the blocked layout).
double TimeForm(const Shape& s, Tag layout, std::string* implementation) {
  const dnnl::engine& engine = Engine();
  dnnl::stream& stream = Stream();
  const int64_t pad = s.kernel / 2, out = (s.size + 2 * pad - s.kernel) / s.stride + 1;
  const memory::dims src_dims = {s.batch, s.in_channels, s.size, s.size};
  const memory::dims dst_dims = {s.batch, s.out_channels, out, out};
  const memory::desc src(src_dims, memory::data_type::f32, layout), dst(dst_dims, memory::data_type::f32, layout);
  const memory::desc weights({s.out_channels, s.in_channels, s.kernel, s.kernel}, memory::data_type::f32, Tag::any);
  dnnl::post_ops ops;
  ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  const dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                      weights, dst, {s.stride, s.stride}, {pad, pad}, {pad, pad}),
      attr, engine);
  *implementation = pd.impl_info_str();
  const memory::desc blocked_src(src_dims, memory::data_type::f32, BlockedTag(16));
  const memory::desc blocked_dst(dst_dims, memory::data_type::f32, BlockedTag(16));
  memory x(blocked_src, engine), y(blocked_dst, engine), src_copy(src, engine), dst_copy(dst, engine);
  std::memset(x.get_data_handle(), 0, blocked_src.get_size());
  std::vector<memory> weight_copies;
  for (int k = 0; k < 8; ++k) {
    weight_copies.emplace_back(pd.weights_desc(), engine);
    std::memset(weight_copies.back().get_data_handle(), 0, pd.weights_desc().get_size());
  }
  const bool blocked = layout != Tag::nhwc;
  dnnl::convolution_forward conv(pd);
  dnnl::reorder to_nhwc(x, src_copy), to_blocked(dst_copy, y);
  return MedianMs(
      [&](int r) {
        if (!blocked) to_nhwc.execute(stream, x, src_copy);
        conv.execute(stream, {{DNNL_ARG_SRC, blocked ? x : src_copy},
                              {DNNL_ARG_WEIGHTS, weight_copies[r % 8]},
                              {DNNL_ARG_DST, blocked ? y : dst_copy}});
        if (!blocked) to_blocked.execute(stream, dst_copy, y);
        stream.wait();
      },
      200);
}

void Run() {
  ThreadPool pool(2);
  UseThreadsOf(pool);
  std::printf("%-34s %9s %9s %6s  %s\n", "shape", "blocked", "nhwc", "ratio", "implementations");
  for (const Shape& s : kShapes) {
    std::string blocked_impl, nhwc_impl;
    const double blocked = TimeForm(s, BlockedTag(16), &blocked_impl);
    const double nhwc = TimeForm(s, Tag::nhwc, &nhwc_impl);
    std::printf("%-34s %9.3f %9.3f %6.2f  %s / %s\n", s.name, blocked, nhwc, nhwc / blocked, blocked_impl.c_str(),
                nhwc_impl.c_str());
  }
}

}  // namespace
}  // namespace qfuse::runtime::onednn

int main() {
  qfuse::runtime::onednn::Run();
  return 0;
}
