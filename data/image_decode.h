// PNG (libpng) and JPEG (libjpeg-turbo) decoding to 8-bit gray or RGB pixels, for image
// calibration data. The format is told by the file's signature, not its extension.
#ifndef QFUSE_DATA_IMAGE_DECODE_H_
#define QFUSE_DATA_IMAGE_DECODE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace qfuse::data {

// A decoded image: rows top to bottom, channels interleaved (HWC), 1 (gray) or 3 (RGB).
struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels
};

// Size and channel count from the file header only (no pixel decoding).
struct ImageHeader {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;  // 1 for gray sources (and gray+alpha), 3 for colour ones
};

absl::StatusOr<ImageHeader> ReadImageHeader(const std::string& path);

// Decodes the whole image. Gray sources decode to 1 channel, colour (palette, RGB, YCbCr)
// ones to 3; 16-bit PNGs are reduced to 8 bits; alpha is removed by compositing on black.
// CMYK JPEGs, corrupt or truncated data (including libjpeg's "corrupt data" warnings) are
// errors naming the file.
absl::StatusOr<Image> DecodeImage(const std::string& path);

}  // namespace qfuse::data

#endif  // QFUSE_DATA_IMAGE_DECODE_H_
