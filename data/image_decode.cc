#include "data/image_decode.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on
#include <png.h>

#include <csetjmp>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace qfuse::data {
namespace {

constexpr uint8_t kPngSignature[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
constexpr uint8_t kJpegSignature[] = {0xFF, 0xD8, 0xFF};

enum class ImageFormat { kPng, kJpeg };

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

absl::StatusOr<ImageFormat> SniffFormat(std::FILE* file, const std::string& path) {
  uint8_t head[sizeof(kPngSignature)] = {};
  const size_t got = std::fread(head, 1, sizeof(head), file);
  std::rewind(file);
  if (got == sizeof(kPngSignature) && std::memcmp(head, kPngSignature, sizeof(kPngSignature)) == 0) {
    return ImageFormat::kPng;
  }
  if (got >= sizeof(kJpegSignature) && std::memcmp(head, kJpegSignature, sizeof(kJpegSignature)) == 0) {
    return ImageFormat::kJpeg;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": not a PNG or JPEG image (", got == 0 ? "empty file" : "unknown signature", ")"));
}

// Images beyond 2^28 pixels (16384 x 16384) are refused before their pixels are
// allocated: a damaged header can claim 65535 x 65535.
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

absl::Status TooLarge(const std::string& path, const Image& image) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": image of ", image.width, "x", image.height,
                                                 " pixels is more than ", kMaxImagePixels));
}

// ---- PNG, through libpng's simplified API (reports errors in image.message, never longjmps here).

absl::Status PngError(const std::string& path, const png_image& image) {
  // libpng's stdio reader says only "Read Error" when the file ends early.
  const bool ended = std::strcmp(image.message, "Read Error") == 0;
  return absl::DataLossError(
      absl::StrCat(path, ": cannot decode PNG (", ended ? "unexpected end of file" : image.message, ")"));
}

absl::StatusOr<Image> ReadPng(std::FILE* file, const std::string& path, bool header_only) {
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_stdio(&png, file)) return PngError(path, png);
  Image image;
  image.height = png.height;
  image.width = png.width;
  image.channels = (png.format & PNG_FORMAT_FLAG_COLOR) != 0 ? 3 : 1;
  if (!header_only && image.height * image.width > kMaxImagePixels) {
    png_image_free(&png);
    return TooLarge(path, image);
  }
  if (header_only) {
    png_image_free(&png);
    return image;
  }
  png.format = image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  image.pixels.assign(PNG_IMAGE_SIZE(png), 0);  // zeros: alpha composites onto black
  if (!png_image_finish_read(&png, /*background=*/nullptr, image.pixels.data(), /*row_stride=*/0,
                             /*colormap=*/nullptr)) {
    absl::Status status = PngError(path, png);
    png_image_free(&png);
    return status;
  }
  return image;
}

// ---- JPEG, through libjpeg with a longjmp error handler.

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg sees a jpeg_error_mgr*
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warned;
};

[[noreturn]] void OnJpegError(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Keeps the first warning (libjpeg warns on corrupt or truncated data and goes on with
// gray fill); trace messages are dropped. Nothing is printed.
void OnJpegMessage(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  if (level >= 0 || err->warned) return;
  (*cinfo->err->format_message)(cinfo, err->message);
  err->warned = true;
}

// Fills `image` (pixels too unless header_only). Returns false with `err->message` set on
// failure. No object with a destructor lives in this frame across setjmp/longjmp.
bool RunJpeg(std::FILE* file, bool header_only, Image* image, JpegErrorManager* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->pub);
  err->pub.error_exit = OnJpegError;
  err->pub.emit_message = OnJpegMessage;
  err->warned = false;
  err->message[0] = '\0';
  if (setjmp(err->jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, file);
  jpeg_read_header(&cinfo, TRUE);
  image->height = cinfo.image_height;
  image->width = cinfo.image_width;
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    std::snprintf(err->message, sizeof(err->message),
                  "%d colour components (CMYK?) are not supported; expected gray or RGB", cinfo.num_components);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  image->channels = cinfo.num_components;
  if (!header_only && image->height * image->width > kMaxImagePixels) {
    std::snprintf(err->message, sizeof(err->message), "%lldx%lld pixels is more than %lld",
                  static_cast<long long>(image->width), static_cast<long long>(image->height),
                  static_cast<long long>(kMaxImagePixels));
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (!header_only) {
    cinfo.out_color_space = image->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    const size_t stride = static_cast<size_t>(cinfo.output_width) * cinfo.output_components;
    image->pixels.assign(stride * cinfo.output_height, 0);
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row = image->pixels.data() + stride * cinfo.output_scanline;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  return !err->warned;
}

absl::StatusOr<Image> ReadJpeg(std::FILE* file, const std::string& path, bool header_only) {
  Image image;
  JpegErrorManager err;
  if (!RunJpeg(file, header_only, &image, &err)) {
    return absl::DataLossError(absl::StrCat(path, ": cannot decode JPEG (", err.message, ")"));
  }
  return image;
}

absl::StatusOr<Image> ReadImage(const std::string& path, bool header_only) {
  FilePtr file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open (", std::strerror(errno), ")"));
  }
  absl::StatusOr<ImageFormat> format = SniffFormat(file.get(), path);
  if (!format.ok()) return format.status();
  absl::StatusOr<Image> image = *format == ImageFormat::kPng ? ReadPng(file.get(), path, header_only)
                                                             : ReadJpeg(file.get(), path, header_only);
  if (image.ok() && (image->height <= 0 || image->width <= 0)) {
    return absl::DataLossError(absl::StrCat(path, ": image has no pixels (", image->width, "x", image->height, ")"));
  }
  return image;
}

}  // namespace

absl::StatusOr<ImageHeader> ReadImageHeader(const std::string& path) {
  absl::StatusOr<Image> image = ReadImage(path, /*header_only=*/true);
  if (!image.ok()) return image.status();
  return ImageHeader{image->height, image->width, image->channels};
}

absl::StatusOr<Image> DecodeImage(const std::string& path) { return ReadImage(path, /*header_only=*/false); }

}  // namespace qfuse::data
