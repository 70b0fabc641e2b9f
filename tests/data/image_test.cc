// PNG/JPEG decoding and image preprocessing, against hand-computed pixel values.
#include <cmath>

#include "base/file_util.h"
#include "data/image_decode.h"
#include "data/image_preprocess.h"
#include "gtest/gtest.h"
#include "ir/tensor.h"
#include "tests/data/dataset_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace qfuse::data {
namespace {

using ::qfuse::testing::FreshDir;
using ::qfuse::testing::WriteBytes;
using ::qfuse::testing::WriteJpeg;
using ::qfuse::testing::WritePng;

std::vector<float> Preprocess(const Image& image, const ImagePreprocess& options, std::vector<int64_t>* dims = nullptr) {
  absl::StatusOr<std::vector<int64_t>> d = PreprocessedDims(image.height, image.width, options);
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return {};
  if (dims != nullptr) *dims = *d;
  std::vector<float> out(ir::NumElements(*d));
  const absl::Status status = PreprocessImage(image, options, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

TEST(ImageDecodeTest, PngGrayAndRgbRoundTrip) {
  const std::string dir = FreshDir("png_roundtrip");
  const std::vector<uint8_t> gray = {0, 100, 200, 40, 255, 7};
  WritePng(dir + "/g.png", 2, 3, 1, gray);
  QFUSE_ASSERT_OK_AND_ASSIGN(ImageHeader gh, ReadImageHeader(dir + "/g.png"));
  EXPECT_EQ(gh.height, 2);
  EXPECT_EQ(gh.width, 3);
  EXPECT_EQ(gh.channels, 1);
  QFUSE_ASSERT_OK_AND_ASSIGN(Image g, DecodeImage(dir + "/g.png"));
  EXPECT_EQ(g.channels, 1);
  EXPECT_EQ(g.pixels, gray);

  const std::vector<uint8_t> rgb = {10, 20, 30, 40, 50, 60};  // 1x2
  WritePng(dir + "/c.png", 1, 2, 3, rgb);
  QFUSE_ASSERT_OK_AND_ASSIGN(Image c, DecodeImage(dir + "/c.png"));
  EXPECT_EQ(c.height, 1);
  EXPECT_EQ(c.width, 2);
  EXPECT_EQ(c.channels, 3);
  EXPECT_EQ(c.pixels, rgb);
}

TEST(ImageDecodeTest, JpegUniformColour) {
  const std::string dir = FreshDir("jpeg_decode");
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 16 * 8; ++i) rgb.insert(rgb.end(), {200, 100, 50});
  WriteJpeg(dir + "/c.jpg", 8, 16, 3, rgb);
  QFUSE_ASSERT_OK_AND_ASSIGN(ImageHeader h, ReadImageHeader(dir + "/c.jpg"));
  EXPECT_EQ(h.height, 8);
  EXPECT_EQ(h.width, 16);
  EXPECT_EQ(h.channels, 3);
  QFUSE_ASSERT_OK_AND_ASSIGN(Image c, DecodeImage(dir + "/c.jpg"));
  ASSERT_EQ(c.pixels.size(), rgb.size());
  for (size_t i = 0; i < rgb.size(); ++i) EXPECT_NEAR(c.pixels[i], rgb[i], 2) << i;  // YCbCr rounding

  WriteJpeg(dir + "/g.jpeg", 8, 8, 1, std::vector<uint8_t>(64, 77));
  QFUSE_ASSERT_OK_AND_ASSIGN(Image g, DecodeImage(dir + "/g.jpeg"));
  EXPECT_EQ(g.channels, 1);
  for (uint8_t v : g.pixels) EXPECT_NEAR(v, 77, 1);
}

void ExpectDecodeError(const std::string& path, const std::string& fragment) {
  absl::StatusOr<Image> image = DecodeImage(path);
  ASSERT_FALSE(image.ok()) << path;
  const std::string message(image.status().message());
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(ImageDecodeTest, UnreadableImagesNameTheFile) {
  const std::string dir = FreshDir("image_errors");
  WriteBytes(dir + "/empty.png", "");
  ExpectDecodeError(dir + "/empty.png", "not a PNG or JPEG image (empty file)");
  WriteBytes(dir + "/text.jpg", "hello, not an image");
  ExpectDecodeError(dir + "/text.jpg", "not a PNG or JPEG image (unknown signature)");
  ExpectDecodeError(dir + "/missing.png", "cannot open");

  std::vector<uint8_t> noise(32 * 32 * 3);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 37 % 251);
  WritePng(dir + "/ok.png", 32, 32, 3, noise);
  WriteJpeg(dir + "/ok.jpg", 32, 32, 3, noise);
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string png, base::ReadFileToString(dir + "/ok.png"));
  QFUSE_ASSERT_OK_AND_ASSIGN(std::string jpg, base::ReadFileToString(dir + "/ok.jpg"));
  WriteBytes(dir + "/cut.png", png.substr(0, png.size() / 2));
  ExpectDecodeError(dir + "/cut.png", "cannot decode PNG (unexpected end of file)");
  WriteBytes(dir + "/cut.jpg", jpg.substr(0, jpg.size() / 2));
  ExpectDecodeError(dir + "/cut.jpg", "cannot decode JPEG (Premature end of JPEG file)");
  WriteBytes(dir + "/header_only.jpg", jpg.substr(0, 40));
  ExpectDecodeError(dir + "/header_only.jpg", "cannot decode JPEG");
  std::string bad_crc = png;
  bad_crc[20] ^= 0x55;  // inside IHDR: its CRC no longer matches
  WriteBytes(dir + "/crc.png", bad_crc);
  ExpectDecodeError(dir + "/crc.png", "cannot decode PNG (IHDR: CRC error)");
}

TEST(ImagePreprocessTest, ResizeCropScaleNormaliseByHand) {
  // 2x2 gray [[0, 100], [200, 40]] -> shorter side 4 -> 4x4 -> centre crop 2: the output
  // samples the source at (0.25|0.75, 0.25|0.75) (half-pixel centres: (1.5 * 2/4) - 0.5).
  Image image{2, 2, 1, {0, 100, 200, 40}};
  ImagePreprocess options;
  options.color = ImagePreprocess::Color::kGray;
  options.resize_shorter = 4;
  options.center_crop = 2;
  options.scale = 1.f;
  std::vector<int64_t> dims;
  std::vector<float> out = Preprocess(image, options, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 2, 2}));
  // (0.25,0.25): rows 25 and 160 -> 58.75; (0.25,0.75): 75, 80 -> 76.25;
  // (0.75,0.25): 25, 160 -> 126.25; (0.75,0.75): 75, 80 -> 78.75.
  EXPECT_EQ(out, (std::vector<float>{58.75f, 76.25f, 126.25f, 78.75f}));

  // Without the crop: the 4x4 corner rows/cols clamp to the source edge.
  options.center_crop = 0;
  out = Preprocess(image, options, &dims);
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[3], 100.f);
  EXPECT_EQ(out[12], 200.f);
  EXPECT_EQ(out[15], 40.f);
  EXPECT_EQ(out[5], 58.75f);

  // scale 1/255, mean 0.5, std 0.25: (v / 255 - 0.5) / 0.25.
  options.center_crop = 2;
  options.scale = 1.f / 255;
  options.mean = {0.5f};
  options.std = {0.25f};
  out = Preprocess(image, options);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_FLOAT_EQ(out[0], (58.75f / 255 - 0.5f) / 0.25f);
  EXPECT_FLOAT_EQ(out[2], (126.25f / 255 - 0.5f) / 0.25f);
}

TEST(ImagePreprocessTest, ResizeKeepsAspect) {
  // Shorter side 3 -> 3 x floor(3 * 7 / 2) = 3x10; taller images likewise.
  ImagePreprocess options;
  options.resize_shorter = 3;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> wide, PreprocessedDims(2, 7, options));
  EXPECT_EQ(wide, (std::vector<int64_t>{3, 3, 10}));
  options.layout = ImagePreprocess::Layout::kNhwc;
  QFUSE_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> tall, PreprocessedDims(7, 2, options));
  EXPECT_EQ(tall, (std::vector<int64_t>{10, 3, 3}));
  options.center_crop = 4;
  absl::StatusOr<std::vector<int64_t>> small = PreprocessedDims(7, 2, options);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().message(), "image is 10x3 (HxW) after resize, smaller than center_crop 4");
}

TEST(ImagePreprocessTest, ColourOrderLayoutAndPerChannelNormalisation) {
  // 1x2 RGB: pixel 0 = (10, 20, 30), pixel 1 = (40, 50, 60).
  Image image{1, 2, 3, {10, 20, 30, 40, 50, 60}};
  ImagePreprocess options;
  options.scale = 1.f;
  EXPECT_EQ(Preprocess(image, options), (std::vector<float>{10, 40, 20, 50, 30, 60}));  // NCHW
  options.layout = ImagePreprocess::Layout::kNhwc;
  EXPECT_EQ(Preprocess(image, options), (std::vector<float>{10, 20, 30, 40, 50, 60}));
  options.color = ImagePreprocess::Color::kBgr;
  EXPECT_EQ(Preprocess(image, options), (std::vector<float>{30, 20, 10, 60, 50, 40}));
  // mean/std follow the output (BGR) channel order.
  options.mean = {30, 20, 10};
  options.std = {2, 4, 5};
  EXPECT_EQ(Preprocess(image, options), (std::vector<float>{0, 0, 0, 15, 7.5f, 6}));
  // Gray from colour: BT.601 luma.
  options = ImagePreprocess();
  options.scale = 1.f;
  options.color = ImagePreprocess::Color::kGray;
  std::vector<float> gray = Preprocess(image, options);
  ASSERT_EQ(gray.size(), 2u);
  EXPECT_FLOAT_EQ(gray[0], 0.299f * 10 + 0.587f * 20 + 0.114f * 30);
  EXPECT_FLOAT_EQ(gray[1], 0.299f * 40 + 0.587f * 50 + 0.114f * 60);
  // A gray source replicated to RGB.
  Image g{1, 1, 1, {9}};
  options.color = ImagePreprocess::Color::kRgb;
  EXPECT_EQ(Preprocess(g, options), (std::vector<float>{9, 9, 9}));
}

TEST(ImagePreprocessTest, ScaleOneOver255IsExactDivision) {
  // The reference preprocessing is pixel / 255 in float32; multiplying by the float 1/255
  // differs in the last bit for about half the byte values.
  const PixelScaler scale(1.f / 255);
  for (int v = 0; v < 256; ++v) EXPECT_EQ(scale(static_cast<float>(v)), static_cast<float>(v) / 255.f) << v;
  const PixelScaler half(0.5f);
  EXPECT_EQ(half(3.f), 1.5f);
  const PixelScaler odd(0.3f);
  EXPECT_EQ(odd(10.f), 10.f * 0.3f);
}

TEST(ImagePreprocessTest, InvalidOptions) {
  ImagePreprocess options;
  options.mean = {1, 2};
  absl::Status status = ValidateImagePreprocess(options);
  EXPECT_EQ(status.message(), "image preprocessing: mean has 2 values; expected 1 or 3 (color rgb)");
  options.mean = {};
  options.std = {0};
  EXPECT_FALSE(ValidateImagePreprocess(options).ok());
  options.std = {};
  options.center_crop = -1;
  EXPECT_FALSE(ValidateImagePreprocess(options).ok());
}

}  // namespace
}  // namespace qfuse::data
