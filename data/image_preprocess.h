// Image preprocessing for calibration data: colour conversion, shorter-side resize,
// centre crop, scale, per-channel normalisation and NCHW/NHWC layout, in that order.
#ifndef QFUSE_DATA_IMAGE_PREPROCESS_H_
#define QFUSE_DATA_IMAGE_PREPROCESS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "data/image_decode.h"

namespace qfuse::data {

// Steps, all in float (no rounding back to 8 bits between them):
//  1. colour: kRgb / kBgr give 3 channels (a gray source is replicated), kGray gives 1
//     (a colour source becomes luma 0.299 R + 0.587 G + 0.114 B, ITU-R BT.601);
//  2. resize_shorter > 0: bilinear resize so the shorter side is resize_shorter and the
//     longer one floor(resize_shorter * longer / shorter) (torchvision's Resize(int) sizes);
//     sample positions use half-pixel centres, src = (dst + 0.5) * in / out - 0.5, clamped
//     to the image (OpenCV INTER_LINEAR, no antialiasing when shrinking);
//  3. center_crop > 0: a center_crop x center_crop window at top = floor((h - crop) / 2),
//     left = floor((w - crop) / 2); an image smaller than the crop is an error;
//  4. value = (pixel * scale - mean[c]) / std[c] (scale through PixelScaler), mean and std
//     indexed by output channel (after any BGR swap); each may be empty (0 and 1), one value,
//     or one per channel;
//  5. layout: kNchw writes [C,H,W], kNhwc writes [H,W,C] (one sample; no batch dim).
struct ImagePreprocess {
  int resize_shorter = 0;  // 0: no resize
  int center_crop = 0;     // 0: no crop
  enum class Color { kRgb, kBgr, kGray } color = Color::kRgb;
  std::vector<float> mean, std;  // per channel, applied after scale
  float scale = 1.f / 255;
  enum class Layout { kNchw, kNhwc } layout = Layout::kNchw;
};

// Multiplies values by `scale`, except that a scale of 1/N (N a whole number, as float)
// divides by N instead: 1/255 then gives exactly pixel / 255.f, the float32 result of the
// reference preprocessing (NumPy's x / np.float32(255), torchvision's ToTensor), which
// multiplying by the rounded reciprocal misses by one ulp for about half the byte values.
class PixelScaler {
 public:
  explicit PixelScaler(float scale);
  float operator()(float value) const { return divisor_ != 0.f ? value / divisor_ : value * scale_; }

 private:
  float scale_;
  float divisor_ = 0.f;  // N when scale is 1/N, else 0
};

// "rgb", "bgr", "gray"; "nchw", "nhwc".
const char* ColorName(ImagePreprocess::Color color);
const char* LayoutName(ImagePreprocess::Layout layout);

// 3 for kRgb / kBgr, 1 for kGray.
int OutputChannels(const ImagePreprocess& options);

// Checks sizes >= 0, mean/std lengths (0, 1 or OutputChannels) and std values != 0.
absl::Status ValidateImagePreprocess(const ImagePreprocess& options);

// Dims of one preprocessed sample ([C,H,W] or [H,W,C]) for a height x width source, without
// decoding it. Fails when the (resized) image is smaller than center_crop.
absl::StatusOr<std::vector<int64_t>> PreprocessedDims(int64_t height, int64_t width, const ImagePreprocess& options);

// Runs the steps above; `out` must hold NumElements(PreprocessedDims(...)) floats.
absl::Status PreprocessImage(const Image& image, const ImagePreprocess& options, absl::Span<float> out);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_IMAGE_PREPROCESS_H_
