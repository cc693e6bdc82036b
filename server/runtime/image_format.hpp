#pragma once
// What an encoded image's first bytes say before any decoder runs: which of the formats the
// server accepts it is (by its magic bytes), the size its header declares, and whether the
// stream reaches its end. The loader refuses an image on these alone, so that a small file can
// neither make a decoder allocate for a size over the limits nor reach one of OpenCV's other
// decoders (some of which go through temporary files). JPEG headers are read by
// kernels/jpeg_header.hpp, which the GPU backend shares.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace svdserve {

enum class ImageFormat : uint8_t { png, jpeg, tiff, bmp, pnm, webp };

// The formats the server decodes, as messages list them.
inline constexpr std::string_view kAcceptedImageFormats =
    "PNG, JPEG, TIFF, BMP, PNM (P1-P6) or WebP";

[[nodiscard]] std::string_view format_name(ImageFormat format) noexcept;

// The format the magic bytes name; nullopt for anything else.
[[nodiscard]] std::optional<ImageFormat> sniff_image_format(
    std::span<const std::byte> bytes) noexcept;

struct DeclaredImage {
  uint32_t width = 0;   // as declared, saturated at UINT32_MAX
  uint32_t height = 0;
  bool complete = true;  // false: the data ends before the format's end (PNG: IEND, WebP: RIFF)
  // The fewest channels the decoder makes of it: PNG's by its colour type, 1 for the others.
  uint32_t min_channels = 1;
};

// The header of a PNG, TIFF (classic or BigTIFF, first image), BMP, PNM or WebP; nullopt when it
// is cut short or malformed. Reads the header and, for PNG, the chunk lengths; never pixels.
[[nodiscard]] std::optional<DeclaredImage> read_declared_image(
    ImageFormat format, std::span<const std::byte> bytes) noexcept;

}  // namespace svdserve
