#pragma once
// Writing a reconstruction to a file: PNG or JPEG as the server encoded it, raw u8/f32 bytes, or
// u8 pixels encoded here by OpenCV when the file name asks for another image format; and the
// pictures the CLI draws, named like images.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "client/cli/args.hpp"  // UsageError
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve::cli {

// "png", "jpeg" (or "jpg"), "u8", "f32" -> the proto's format. Throws UsageError for anything
// else.
[[nodiscard]] v1::OutputFormat parse_output_format(std::string_view text);
[[nodiscard]] std::string_view output_format_name(v1::OutputFormat format) noexcept;

// The file extension of a server-encoded format: "png" or "jpg".
[[nodiscard]] std::string_view encoded_extension(v1::OutputFormat format) noexcept;

// The format to ask the server for: the --format flag when given; else PNG for a .png file, JPEG
// for .jpg or .jpeg, u8 for any other image extension (encoded locally) and for everything else
// (raw bytes).
[[nodiscard]] v1::OutputFormat choose_output_format(const std::optional<std::string>& flag,
                                                    const std::filesystem::path& out);

// True when u8 pixels headed for out should be encoded here: the format is u8 and out has an
// image extension.
[[nodiscard]] bool encodes_locally(v1::OutputFormat format, const std::filesystem::path& out);

// Writes the pixels to out as described above; returns the bytes written. Throws
// std::runtime_error when the pixels do not match the shape or the file cannot be written.
std::uint64_t write_output_image(const std::filesystem::path& out, v1::OutputFormat format,
                                 const v1::Shape& shape, const std::string& pixels);

// A picture the CLI draws (contact sheet, spectrum plot) goes to a file named like an image
// (image_extensions(), any case) that OpenCV can write; anything else is a UsageError naming option.
void require_picture_name(const std::filesystem::path& out, std::string_view option);

// Encodes the 8-bit image by out's extension (PGM/PBM grey, PPM colour) and writes it; returns
// the bytes written. Throws std::runtime_error when it cannot be encoded or written.
std::uint64_t write_image_file(const std::filesystem::path& out, const cv::Mat& image);

}  // namespace svdserve::cli
