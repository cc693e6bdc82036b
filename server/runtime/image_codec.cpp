#include "server/runtime/image_codec.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/trace.hpp"
#include "server/runtime/image_file.hpp"
#include "server/runtime/image_format.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

void check_dimensions(uint32_t width, uint32_t height, uint32_t channels,
                      const ImageLimits& limits) {
  if (width == 0 || height == 0) throw InvalidArgument("image has zero width or height");
  if (width > limits.max_width || height > limits.max_height) {
    throw InvalidArgument("image is " + std::to_string(width) + "x" + std::to_string(height) +
                          ", larger than the server's limit of " +
                          std::to_string(limits.max_width) + "x" +
                          std::to_string(limits.max_height) + " (max_image_width/height)");
  }
  if (channels != 1 && channels != 3 && channels != 4) {
    throw InvalidArgument("image has " + std::to_string(channels) +
                          " channels; 1 (grey), 3 (BGR) or 4 (BGRA) are supported");
  }
}

SampleType sample_type_for_depth(int depth) {
  switch (depth) {
    case CV_8U: return SampleType::u8;
    case CV_16U: return SampleType::u16;
    case CV_32F: return SampleType::f32;
    default:
      throw InvalidArgument("unsupported pixel depth; send 8-bit, 16-bit or float32 images");
  }
}

// A continuous OpenCV matrix (as imdecode makes, or wrapping request bytes) -> DecodedImage.
DecodedImage from_mat(const cv::Mat& interleaved) {
  DecodedImage image;
  image.shape = {static_cast<uint32_t>(interleaved.cols), static_cast<uint32_t>(interleaved.rows),
                 static_cast<uint32_t>(interleaved.channels())};
  image.type = sample_type_for_depth(interleaved.depth());
  const cv::Mat continuous = interleaved.isContinuous() ? interleaved : interleaved.clone();
  const auto* first = reinterpret_cast<const std::byte*>(continuous.data);
  image.samples.assign(first, first + continuous.total() * continuous.elemSize());
  if (image.type == SampleType::f32) {
    const auto* values = reinterpret_cast<const float*>(image.samples.data());
    for (std::size_t i = 0; i < image.shape.values(); ++i) {
      if (!std::isfinite(values[i])) throw InvalidArgument("image contains NaN or infinite values");
    }
  }
  return image;
}

int depth_of(SampleType type) {
  switch (type) {
    case SampleType::u8: return CV_8U;
    case SampleType::u16: return CV_16U;
    case SampleType::f32: return CV_32F;
  }
  return CV_8U;
}

DecodedImage decode_raw(const RawPixels& raw, const ImageLimits& limits, const ShapeCheck& admit) {
  trace::ScopedRange range("convert_raw");
  check_dimensions(raw.width, raw.height, raw.channels, limits);
  if (!raw.type) {
    throw InvalidArgument("raw image type is not set; use PIXEL_TYPE_U8, _U16 or _F32");
  }
  const std::size_t value_bytes = bytes_per_sample(*raw.type);
  const std::size_t expected = std::size_t{raw.width} * raw.height * raw.channels * value_bytes;
  if (raw.samples.size() != expected) {
    throw InvalidArgument("raw image data is " + std::to_string(raw.samples.size()) +
                          " bytes but width*height*channels*bytes_per_value = " +
                          std::to_string(raw.width) + "*" + std::to_string(raw.height) + "*" +
                          std::to_string(raw.channels) + "*" + std::to_string(value_bytes) +
                          " = " + std::to_string(expected));
  }
  if (expected > limits.max_bytes) {
    throw InvalidArgument("raw image is " + std::to_string(expected) +
                          " bytes, over the server's max_image_bytes of " +
                          std::to_string(limits.max_bytes));
  }
  if (admit) admit({raw.width, raw.height, raw.channels});
  const cv::Mat wrapped(static_cast<int>(raw.height), static_cast<int>(raw.width),
                        CV_MAKETYPE(depth_of(*raw.type), static_cast<int>(raw.channels)),
                        const_cast<std::byte*>(raw.samples.data()));
  return from_mat(wrapped);
}

// A view of interleaved u8 pixels for imencode, which only reads them.
cv::Mat wrap_u8(std::span<const std::byte> pixels, const ImageShape& shape) {
  return {static_cast<int>(shape.height), static_cast<int>(shape.width),
          CV_MAKETYPE(CV_8U, static_cast<int>(shape.channels)),
          const_cast<std::byte*>(pixels.data())};
}

constexpr std::string_view kTruncated =
    "the data is truncated (it ends before the format's end marker)";

// What a client is told about its bytes: the format they claim and why they do not decode, never
// the decoder's own words (OpenCV's carry its source paths); those go to the debug log.
InvalidArgument undecodable(ImageFormat format, std::string_view reason) {
  return InvalidArgument("not a decodable " + std::string(format_name(format)) + ": " +
                         std::string(reason));
}

}  // namespace

DecodedImage decode_encoded(std::span<const std::byte> encoded, const ImageLimits& limits,
                            const DeviceJpegFilter& device_decodes, const ShapeCheck& admit) {
  trace::ScopedRange range("decode");
  if (encoded.empty()) throw InvalidArgument("image bytes are empty");
  if (encoded.size() > limits.max_bytes) {
    throw InvalidArgument("image is " + std::to_string(encoded.size()) +
                          " bytes, over the server's max_image_bytes of " +
                          std::to_string(limits.max_bytes));
  }
  const std::optional<ImageFormat> format = sniff_image_format(encoded);
  if (!format) {
    throw InvalidArgument("the image is not a " + std::string(kAcceptedImageFormats) +
                          " file (judged by its first bytes); send one of those, or raw pixels");
  }
  // Sizes come from the header, before any decoding, rather than from OpenCV's
  // OPENCV_IO_MAX_IMAGE_* limits: OpenCV reads those once as it loads, before the config exists,
  // and the environment can raise them. Channels are checked after decoding (CMYK becomes BGR).
  if (*format == ImageFormat::jpeg) {
    const std::optional<JpegHeader> header = read_jpeg_header(encoded);
    if (!header) {
      throw undecodable(*format, "its markers are malformed or truncated before the frame header");
    }
    check_dimensions(header->width, header->height, 1, limits);
    // libjpeg decodes a cut-off scan with grey rows and only warns: refuse it here.
    if (!header->complete) throw undecodable(*format, kTruncated);
    // Grey stays grey; colour (YCbCr, CMYK) becomes BGR.
    if (admit) admit({header->width, header->height, header->components == 1 ? 1U : 3U});
    if (device_decodes && device_decodes(*header)) {
      DecodedImage image;
      image.shape = {header->width, header->height, header->components};
      image.type = SampleType::u8;
      image.jpeg.assign(encoded.begin(), encoded.end());
      return image;
    }
  } else {
    const std::optional<DeclaredImage> header = read_declared_image(*format, encoded);
    if (!header) throw undecodable(*format, "its header is malformed or truncated");
    check_dimensions(header->width, header->height, 1, limits);
    if (!header->complete) throw undecodable(*format, kTruncated);
    if (admit) admit({header->width, header->height, header->min_channels});
  }
  const cv::Mat buffer(1, static_cast<int>(encoded.size()), CV_8U,
                       const_cast<std::byte*>(encoded.data()));
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(buffer, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    log().debug("decode failed format={} error=\"{}\"", format_name(*format), e.what());
    throw undecodable(*format, "the decoder rejected its data");
  }
  if (decoded.empty()) {
    log().debug("decode failed format={} error=\"no image\"", format_name(*format));
    throw undecodable(*format, "its data is corrupt or truncated");
  }
  check_dimensions(static_cast<uint32_t>(decoded.cols), static_cast<uint32_t>(decoded.rows),
                   static_cast<uint32_t>(decoded.channels()), limits);
  return from_mat(decoded);
}

DecodedImage decode_image(const ImageSource& source, const ImageLimits& limits,
                          const DeviceJpegFilter& device_decodes, const ShapeCheck& admit) {
  struct Decode {
    const ImageLimits& limits;
    const DeviceJpegFilter& device_decodes;
    const ShapeCheck& admit;
    DecodedImage operator()(std::monostate) const {
      throw InvalidArgument("request has no image: set image.encoded or image.raw");
    }
    DecodedImage operator()(const EncodedImage& encoded) const {
      return decode_encoded(encoded.bytes, limits, device_decodes, admit);
    }
    DecodedImage operator()(const RawPixels& raw) const { return decode_raw(raw, limits, admit); }
    DecodedImage operator()(const ImageFile& file) const {
      const std::string bytes = read_image_file(*file.root, file.path, limits.max_bytes);
      return decode_encoded(std::as_bytes(std::span(bytes.data(), bytes.size())), limits,
                            device_decodes, admit);
    }
  };
  return std::visit(Decode{limits, device_decodes, admit}, source);
}

std::string encode_png(std::span<const std::byte> pixels, const ImageShape& shape) {
  trace::ScopedRange range("encode_png");
  std::vector<uint8_t> png;
  // Level 1: PNG's size barely changes for photos at higher levels, but time grows severalfold.
  if (!cv::imencode(".png", wrap_u8(pixels, shape), png, {cv::IMWRITE_PNG_COMPRESSION, 1})) {
    throw InternalError("PNG encoding failed");
  }
  return std::string(png.begin(), png.end());
}

std::string encode_jpeg(std::span<const std::byte> pixels, const ImageShape& shape,
                        uint32_t quality) {
  trace::ScopedRange range("encode_jpeg");
  check_output_format(OutputFormat::jpeg, shape);
  if (quality < 1 || quality > kMaxJpegQuality) {
    throw InvalidArgument("jpeg_quality is " + std::to_string(quality) + "; use 1..100");
  }
  std::vector<uint8_t> jpeg;
  if (!cv::imencode(".jpg", wrap_u8(pixels, shape), jpeg,
                    {cv::IMWRITE_JPEG_QUALITY, static_cast<int>(quality)})) {
    throw InternalError("JPEG encoding failed");
  }
  return std::string(jpeg.begin(), jpeg.end());
}

void check_output_format(OutputFormat format, const ImageShape& shape) {
  if (format == OutputFormat::jpeg && shape.channels != 1 && shape.channels != 3) {
    throw InvalidArgument("the image has " + std::to_string(shape.channels) +
                          " channels and JPEG holds only grey or BGR (no alpha); ask for "
                          "OUTPUT_FORMAT_PNG to keep every channel");
  }
}

}  // namespace svdserve
