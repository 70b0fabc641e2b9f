#include "data/image_preprocess.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/tensor.h"

namespace qfuse::data {
namespace {

// ITU-R BT.601 luma weights.
constexpr float kLumaR = 0.299f;
constexpr float kLumaG = 0.587f;
constexpr float kLumaB = 0.114f;

// Source taps for one output coordinate of a bilinear resize.
struct Tap {
  int64_t i0, i1;
  float w1;  // weight of i1; i0 gets 1 - w1
};

std::vector<Tap> BilinearTaps(int64_t in, int64_t out) {
  std::vector<Tap> taps(out);
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t o = 0; o < out; ++o) {
    const double f = std::max(0.0, (o + 0.5) * ratio - 0.5);
    const int64_t i0 = static_cast<int64_t>(std::floor(f));
    if (i0 >= in - 1) {
      taps[o] = {in - 1, in - 1, 0.f};
    } else {
      taps[o] = {i0, i0 + 1, static_cast<float>(f - i0)};
    }
  }
  return taps;
}

struct Size {
  int64_t height, width;
};

Size ResizedSize(int64_t height, int64_t width, int shorter) {
  if (shorter <= 0) return {height, width};
  if (height <= width) return {shorter, shorter * width / height};
  return {shorter * height / width, shorter};
}

// The image as float HWC with the output channel count (step 1).
std::vector<float> ConvertColor(const Image& image, ImagePreprocess::Color color) {
  const int64_t pixels = image.height * image.width;
  const uint8_t* src = image.pixels.data();
  if (color == ImagePreprocess::Color::kGray) {
    std::vector<float> out(pixels);
    for (int64_t p = 0; p < pixels; ++p) {
      out[p] = image.channels == 1
                   ? src[p]
                   : kLumaR * src[3 * p] + kLumaG * src[3 * p + 1] + kLumaB * src[3 * p + 2];
    }
    return out;
  }
  const bool bgr = color == ImagePreprocess::Color::kBgr;
  std::vector<float> out(pixels * 3);
  for (int64_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < 3; ++c) {
      const int from = bgr ? 2 - c : c;
      out[3 * p + c] = image.channels == 1 ? src[p] : src[3 * p + from];
    }
  }
  return out;
}

std::vector<float> ResizeBilinear(const std::vector<float>& in, Size from, Size to, int channels) {
  const std::vector<Tap> ys = BilinearTaps(from.height, to.height);
  const std::vector<Tap> xs = BilinearTaps(from.width, to.width);
  std::vector<float> out(to.height * to.width * channels);
  const int64_t row = from.width * channels;
  for (int64_t y = 0; y < to.height; ++y) {
    const float* r0 = in.data() + ys[y].i0 * row;
    const float* r1 = in.data() + ys[y].i1 * row;
    const float wy = ys[y].w1;
    for (int64_t x = 0; x < to.width; ++x) {
      const Tap& t = xs[x];
      for (int c = 0; c < channels; ++c) {
        const float top = r0[t.i0 * channels + c] * (1 - t.w1) + r0[t.i1 * channels + c] * t.w1;
        const float bottom = r1[t.i0 * channels + c] * (1 - t.w1) + r1[t.i1 * channels + c] * t.w1;
        out[(y * to.width + x) * channels + c] = top * (1 - wy) + bottom * wy;
      }
    }
  }
  return out;
}

float PerChannel(const std::vector<float>& values, int channel, float fallback) {
  if (values.empty()) return fallback;
  return values.size() == 1 ? values[0] : values[channel];
}

}  // namespace

PixelScaler::PixelScaler(float scale) : scale_(scale) {
  if (!(scale > 0.f) || !std::isfinite(scale)) return;
  const double inverse = 1.0 / scale;
  const double whole = std::round(inverse);
  // A float 1/N is within 2^-24 relative of the true 1/N.
  if (whole >= 1.0 && whole <= (1 << 24) && std::abs(inverse - whole) <= whole * 1e-6) {
    divisor_ = static_cast<float>(whole);
  }
}

const char* ColorName(ImagePreprocess::Color color) {
  switch (color) {
    case ImagePreprocess::Color::kRgb: return "rgb";
    case ImagePreprocess::Color::kBgr: return "bgr";
    case ImagePreprocess::Color::kGray: return "gray";
  }
  return "?";
}

const char* LayoutName(ImagePreprocess::Layout layout) {
  return layout == ImagePreprocess::Layout::kNchw ? "nchw" : "nhwc";
}

int OutputChannels(const ImagePreprocess& options) {
  return options.color == ImagePreprocess::Color::kGray ? 1 : 3;
}

absl::Status ValidateImagePreprocess(const ImagePreprocess& options) {
  if (options.resize_shorter < 0 || options.center_crop < 0) {
    return absl::InvalidArgumentError(absl::StrCat("image preprocessing: resize_shorter (", options.resize_shorter,
                                                   ") and center_crop (", options.center_crop,
                                                   ") must be >= 0"));
  }
  const size_t channels = OutputChannels(options);
  for (const auto& [name, values] : {std::pair{"mean", &options.mean}, std::pair{"std", &options.std}}) {
    if (values->size() > 1 && values->size() != channels) {
      return absl::InvalidArgumentError(absl::StrCat("image preprocessing: ", name, " has ", values->size(),
                                                     " values; expected 1 or ", channels, " (color ",
                                                     ColorName(options.color), ")"));
    }
  }
  for (float s : options.std) {
    if (s == 0.f || !std::isfinite(s)) {
      return absl::InvalidArgumentError(absl::StrCat("image preprocessing: std values must be finite and non-zero, got ", s));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> PreprocessedDims(int64_t height, int64_t width, const ImagePreprocess& options) {
  Size size = ResizedSize(height, width, options.resize_shorter);
  if (options.center_crop > 0) {
    if (size.height < options.center_crop || size.width < options.center_crop) {
      return absl::InvalidArgumentError(absl::StrCat("image is ", size.height, "x", size.width, " (HxW)",
                                                     options.resize_shorter > 0 ? " after resize" : "",
                                                     ", smaller than center_crop ", options.center_crop));
    }
    size = {options.center_crop, options.center_crop};
  }
  const int64_t channels = OutputChannels(options);
  if (options.layout == ImagePreprocess::Layout::kNchw) return std::vector<int64_t>{channels, size.height, size.width};
  return std::vector<int64_t>{size.height, size.width, channels};
}

absl::Status PreprocessImage(const Image& image, const ImagePreprocess& options, absl::Span<float> out) {
  absl::StatusOr<std::vector<int64_t>> dims = PreprocessedDims(image.height, image.width, options);
  if (!dims.ok()) return dims.status();
  if (static_cast<int64_t>(out.size()) != ir::NumElements(*dims)) {
    return absl::InvalidArgumentError(absl::StrCat("image preprocessing: output holds ", out.size(),
                                                   " floats, expected ", ir::NumElements(*dims), " for ",
                                                   ir::DimsToString(*dims)));
  }
  const int channels = OutputChannels(options);
  std::vector<float> pixels = ConvertColor(image, options.color);
  const Size resized = ResizedSize(image.height, image.width, options.resize_shorter);
  if (resized.height != image.height || resized.width != image.width) {
    pixels = ResizeBilinear(pixels, {image.height, image.width}, resized, channels);
  }
  const int64_t crop_h = options.center_crop > 0 ? options.center_crop : resized.height;
  const int64_t crop_w = options.center_crop > 0 ? options.center_crop : resized.width;
  const int64_t top = (resized.height - crop_h) / 2;
  const int64_t left = (resized.width - crop_w) / 2;
  const bool nchw = options.layout == ImagePreprocess::Layout::kNchw;
  const PixelScaler scale(options.scale);
  for (int c = 0; c < channels; ++c) {
    const float mean = PerChannel(options.mean, c, 0.f);
    const float std = PerChannel(options.std, c, 1.f);
    for (int64_t y = 0; y < crop_h; ++y) {
      const float* row = pixels.data() + ((top + y) * resized.width + left) * channels;
      for (int64_t x = 0; x < crop_w; ++x) {
        const int64_t at = nchw ? (c * crop_h + y) * crop_w + x : (y * crop_w + x) * channels + c;
        out[at] = (scale(row[x * channels + c]) - mean) / std;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace qfuse::data
