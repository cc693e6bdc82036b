#include "client/cli/image_output.hpp"

#include <stdexcept>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "client/cli/args.hpp"
#include "client/image_files.hpp"

namespace svdserve::cli {
namespace {

constexpr int kPngCompressionLevel = 9;

// The PNM formats hold one layout each: PGM and PBM grey, PPM colour. The others take 1, 3 or 4
// channels as they come.
cv::Mat with_channels_for(const std::string& extension, const cv::Mat& image) {
  const int channels = image.channels();
  cv::Mat converted;
  if ((extension == "pgm" || extension == "pbm") && channels != 1) {
    cv::cvtColor(image, converted, channels == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
    return converted;
  }
  if (extension == "ppm" && channels != 3) {
    cv::cvtColor(image, converted, channels == 1 ? cv::COLOR_GRAY2BGR : cv::COLOR_BGRA2BGR);
    return converted;
  }
  return image;
}

std::uint64_t encode_u8(const std::filesystem::path& out, const v1::Shape& shape, const std::string& pixels) {
  const std::uint64_t expected =
      std::uint64_t{shape.width()} * shape.height() * shape.channels();
  if (shape.channels() == 0 || shape.channels() > CV_CN_MAX || pixels.size() != expected) {
    throw std::runtime_error("the server sent " + std::to_string(pixels.size()) + " bytes for a " +
                             std::to_string(shape.width()) + "x" + std::to_string(shape.height()) + "x" +
                             std::to_string(shape.channels()) + " u8 image");
  }
  // imwrite only reads the pixels; the cast is for cv::Mat's constructor.
  const cv::Mat image(static_cast<int>(shape.height()), static_cast<int>(shape.width()),
                      CV_8UC(static_cast<int>(shape.channels())),
                      const_cast<char*>(pixels.data()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  return write_image_file(out, image);
}

}  // namespace

void require_picture_name(const std::filesystem::path& out, std::string_view option) {
  if (!has_image_extension(out) || !cv::haveImageWriter(out.string())) {
    throw UsageError(std::string(option) + " needs an image file name (.png, .jpg, .bmp, .tif, .ppm, ...), got '" +
                     out.filename().string() + "'");
  }
}

std::uint64_t write_image_file(const std::filesystem::path& out, const cv::Mat& image) {
  bool written = false;
  try {
    // OpenCV's default PNG level favours speed; these files are written once and kept.
    const std::vector<int> parameters = {cv::IMWRITE_PNG_COMPRESSION, kPngCompressionLevel};
    written = cv::imwrite(out.string(), with_channels_for(lower_case_extension(out), image), parameters);
  } catch (const cv::Exception& error) {
    throw std::runtime_error("cannot encode " + out.string() + " (" + std::to_string(image.channels()) +
                             " channels)");
  }
  if (!written) throw std::runtime_error("cannot encode or write " + out.string());
  std::error_code error;
  const auto size = std::filesystem::file_size(out, error);
  return error ? 0 : size;
}

v1::OutputFormat parse_output_format(std::string_view text) {
  if (text == "png") return v1::OUTPUT_FORMAT_PNG;
  if (text == "jpeg" || text == "jpg") return v1::OUTPUT_FORMAT_JPEG;
  if (text == "u8") return v1::OUTPUT_FORMAT_RAW_U8;
  if (text == "f32") return v1::OUTPUT_FORMAT_RAW_F32;
  throw UsageError("--format expects png, jpeg, u8 or f32, got '" + std::string(text) + "'");
}

std::string_view output_format_name(v1::OutputFormat format) noexcept {
  switch (format) {
    case v1::OUTPUT_FORMAT_PNG: return "png";
    case v1::OUTPUT_FORMAT_JPEG: return "jpeg";
    case v1::OUTPUT_FORMAT_RAW_F32: return "f32";
    default: return "u8";
  }
}

std::string_view encoded_extension(v1::OutputFormat format) noexcept {
  return format == v1::OUTPUT_FORMAT_JPEG ? "jpg" : "png";
}

v1::OutputFormat choose_output_format(const std::optional<std::string>& flag, const std::filesystem::path& out) {
  if (flag) return parse_output_format(*flag);
  const std::string extension = lower_case_extension(out);
  if (extension == "png") return v1::OUTPUT_FORMAT_PNG;
  if (extension == "jpg" || extension == "jpeg") return v1::OUTPUT_FORMAT_JPEG;
  // Other image names are encoded here; raw names (or none) get the pixels as they are.
  if (has_image_extension(out) || extension.empty() || extension == "raw" || extension == "u8" ||
      extension == "bin") {
    return v1::OUTPUT_FORMAT_RAW_U8;
  }
  throw UsageError("cannot tell the output format from '" + out.filename().string() +
                   "': name it .png, .jpg or another image type, .raw for the bare pixels, or pass "
                   "--format");
}

bool encodes_locally(v1::OutputFormat format, const std::filesystem::path& out) {
  const bool u8 = format == v1::OUTPUT_FORMAT_RAW_U8 || format == v1::OUTPUT_FORMAT_UNSPECIFIED;
  return u8 && has_image_extension(out);
}

std::uint64_t write_output_image(const std::filesystem::path& out, v1::OutputFormat format,
                                 const v1::Shape& shape, const std::string& pixels) {
  if (encodes_locally(format, out)) return encode_u8(out, shape, pixels);
  write_file_bytes(out, pixels);
  return pixels.size();
}

}  // namespace svdserve::cli
