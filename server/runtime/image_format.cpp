#include "server/runtime/image_format.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace svdserve {
namespace {

using Bytes = std::span<const std::byte>;

[[nodiscard]] uint8_t at(Bytes bytes, std::size_t i) noexcept {
  return static_cast<uint8_t>(bytes[i]);
}

// `count` bytes from `offset`, little- or big-endian; the caller checks the bounds.
[[nodiscard]] uint64_t little_endian(Bytes bytes, std::size_t offset, int count) noexcept {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | at(bytes, offset + i);
  return value;
}
[[nodiscard]] uint64_t big_endian(Bytes bytes, std::size_t offset, int count) noexcept {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i) value = (value << 8) | at(bytes, offset + i);
  return value;
}

[[nodiscard]] bool starts_with(Bytes bytes, std::string_view magic,
                               std::size_t offset = 0) noexcept {
  return bytes.size() >= offset + magic.size() &&
         std::memcmp(bytes.data() + offset, magic.data(), magic.size()) == 0;
}

[[nodiscard]] uint32_t saturated(uint64_t value) noexcept {
  return static_cast<uint32_t>(std::min<uint64_t>(value, std::numeric_limits<uint32_t>::max()));
}

[[nodiscard]] bool is_pnm_space(uint8_t c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// OpenCV's channels for a PNG colour type, at the least: grey 1, RGB and palette 3 (4 with a
// tRNS chunk), RGBA 4; grey with alpha 1, which it may widen.
[[nodiscard]] uint32_t png_min_channels(uint8_t colour_type) noexcept {
  constexpr uint8_t kRgb = 2, kPalette = 3, kRgba = 6;
  if (colour_type == kRgba) return 4;
  return colour_type == kRgb || colour_type == kPalette ? 3 : 1;
}

// Signature, then chunks (length, type, data, CRC) from IHDR to IEND.
std::optional<DeclaredImage> read_png(Bytes bytes) noexcept {
  constexpr std::size_t kSignature = 8, kChunkFrame = 12, kHeaderData = 13;
  if (bytes.size() < kSignature + kChunkFrame + kHeaderData ||
      big_endian(bytes, kSignature, 4) != kHeaderData || !starts_with(bytes, "IHDR", 12)) {
    return std::nullopt;
  }
  DeclaredImage image{saturated(big_endian(bytes, 16, 4)), saturated(big_endian(bytes, 20, 4)),
                      false, png_min_channels(at(bytes, 25))};
  // PNG caps chunk lengths at 2^31 - 1; the walk costs one step per chunk.
  for (std::size_t position = kSignature; position + 8 <= bytes.size();) {
    const uint64_t length = big_endian(bytes, position, 4);
    if (length > std::numeric_limits<int32_t>::max()) return std::nullopt;
    if (starts_with(bytes, "IEND", position + 4)) {
      image.complete = position + kChunkFrame <= bytes.size();
      break;
    }
    position += kChunkFrame + length;
  }
  return image;
}

// Byte order, then the first image file directory's ImageWidth and ImageLength (SHORT, LONG or,
// in a BigTIFF, LONG8).
std::optional<DeclaredImage> read_tiff(Bytes bytes) noexcept {
  constexpr uint16_t kImageWidth = 256, kImageLength = 257;
  constexpr uint16_t kShort = 3, kLong = 4, kLong8 = 16;
  if (bytes.size() < 8) return std::nullopt;
  const bool little = at(bytes, 0) == 'I';
  const auto number = [&](std::size_t offset, int count) {
    return little ? little_endian(bytes, offset, count) : big_endian(bytes, offset, count);
  };
  const bool big_tiff = number(2, 2) == 43;
  const int offset_bytes = big_tiff ? 8 : 4;
  if (big_tiff && (bytes.size() < 16 || number(4, 2) != 8)) return std::nullopt;
  const uint64_t directory = number(big_tiff ? 8 : 4, offset_bytes);
  const int count_bytes = big_tiff ? 8 : 2;
  if (directory > bytes.size() || bytes.size() - directory < static_cast<uint64_t>(count_bytes)) {
    return std::nullopt;
  }
  const uint64_t entries = number(directory, count_bytes);
  const std::size_t entry_bytes = big_tiff ? 20 : 12;
  const std::size_t value_at = big_tiff ? 12 : 8;
  std::optional<uint64_t> width, height;
  std::size_t entry = directory + count_bytes;
  for (uint64_t i = 0; i < entries && entry + entry_bytes <= bytes.size(); ++i) {
    const auto tag = static_cast<uint16_t>(number(entry, 2));
    const auto type = static_cast<uint16_t>(number(entry + 2, 2));
    if (tag == kImageWidth || tag == kImageLength) {
      std::optional<uint64_t> value;
      if (type == kShort) value = number(entry + value_at, 2);
      if (type == kLong) value = number(entry + value_at, 4);
      if (type == kLong8 && big_tiff) value = number(entry + value_at, 8);
      (tag == kImageWidth ? width : height) = value;
    }
    entry += entry_bytes;
  }
  if (!width || !height) return std::nullopt;
  return DeclaredImage{saturated(*width), saturated(*height)};
}

// File header, then the DIB header: OS/2 1.x (12 bytes) has 16-bit sizes, every later one signed
// 32-bit sizes, a negative height meaning top-down rows.
std::optional<DeclaredImage> read_bmp(Bytes bytes) noexcept {
  constexpr std::size_t kDibAt = 14;
  if (bytes.size() < kDibAt + 4) return std::nullopt;
  const uint64_t dib_bytes = little_endian(bytes, kDibAt, 4);
  if (dib_bytes == 12 && bytes.size() >= kDibAt + 12) {
    return DeclaredImage{static_cast<uint32_t>(little_endian(bytes, 18, 2)),
                         static_cast<uint32_t>(little_endian(bytes, 20, 2))};
  }
  if (dib_bytes < 16 || bytes.size() < kDibAt + 16) return std::nullopt;
  const auto width = static_cast<int32_t>(little_endian(bytes, 18, 4));
  const auto height = static_cast<int32_t>(little_endian(bytes, 22, 4));
  if (width < 0) return std::nullopt;
  return DeclaredImage{static_cast<uint32_t>(width),
                       saturated(static_cast<uint64_t>(std::abs(int64_t{height})))};
}

// "Pn", then width and height as decimal text, with whitespace and #-comments between.
std::optional<DeclaredImage> read_pnm(Bytes bytes) noexcept {
  std::size_t position = 2;
  const auto next_number = [&]() -> std::optional<uint64_t> {
    while (position < bytes.size()) {
      if (at(bytes, position) == '#') {
        while (position < bytes.size() && at(bytes, position) != '\n' &&
               at(bytes, position) != '\r') {
          ++position;
        }
      } else if (is_pnm_space(at(bytes, position))) {
        ++position;
      } else {
        break;
      }
    }
    uint64_t value = 0;
    const std::size_t first = position;
    for (; position < bytes.size() && at(bytes, position) >= '0' && at(bytes, position) <= '9';
         ++position) {
      value = std::min<uint64_t>(value * 10 + (at(bytes, position) - '0'), uint64_t{1} << 40);
    }
    if (position == first) return std::nullopt;
    return value;
  };
  const std::optional<uint64_t> width = next_number();
  const std::optional<uint64_t> height = next_number();
  if (!width || !height) return std::nullopt;
  return DeclaredImage{saturated(*width), saturated(*height)};
}

// RIFF container, then the first chunk: VP8 (lossy), VP8L (lossless) or VP8X (extended).
std::optional<DeclaredImage> read_webp(Bytes bytes) noexcept {
  constexpr std::size_t kRiffHeader = 8, kChunkData = 20;
  // What each chunk's sizes need: VP8's frame tag and start code, VP8L's signature, VP8X's flags.
  constexpr std::size_t kLossyHeader = 10, kLosslessHeader = 5, kExtendedHeader = 10;
  DeclaredImage image;
  if (starts_with(bytes, "VP8 ", 12) && bytes.size() >= kChunkData + kLossyHeader) {
    const bool start_code = at(bytes, 23) == 0x9D && at(bytes, 24) == 0x01 && at(bytes, 25) == 0x2A;
    if (!start_code) return std::nullopt;
    image.width = static_cast<uint32_t>(little_endian(bytes, 26, 2) & 0x3FFF);
    image.height = static_cast<uint32_t>(little_endian(bytes, 28, 2) & 0x3FFF);
  } else if (starts_with(bytes, "VP8L", 12) && bytes.size() >= kChunkData + kLosslessHeader) {
    if (at(bytes, kChunkData) != 0x2F) return std::nullopt;
    const uint64_t sizes = little_endian(bytes, kChunkData + 1, 4);
    image.width = static_cast<uint32_t>(sizes & 0x3FFF) + 1;
    image.height = static_cast<uint32_t>((sizes >> 14) & 0x3FFF) + 1;
  } else if (starts_with(bytes, "VP8X", 12) && bytes.size() >= kChunkData + kExtendedHeader) {
    image.width = static_cast<uint32_t>(little_endian(bytes, kChunkData + 4, 3)) + 1;
    image.height = static_cast<uint32_t>(little_endian(bytes, kChunkData + 7, 3)) + 1;
  } else {
    return std::nullopt;
  }
  image.complete = kRiffHeader + little_endian(bytes, 4, 4) <= bytes.size();
  return image;
}

}  // namespace

std::string_view format_name(ImageFormat format) noexcept {
  switch (format) {
    case ImageFormat::png: return "PNG";
    case ImageFormat::jpeg: return "JPEG";
    case ImageFormat::tiff: return "TIFF";
    case ImageFormat::bmp: return "BMP";
    case ImageFormat::pnm: return "PNM";
    case ImageFormat::webp: return "WebP";
  }
  return "image";
}

std::optional<ImageFormat> sniff_image_format(std::span<const std::byte> bytes) noexcept {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return ImageFormat::png;
  if (starts_with(bytes, "\xFF\xD8\xFF")) return ImageFormat::jpeg;
  if (starts_with(bytes, std::string_view("II*\0", 4)) ||
      starts_with(bytes, std::string_view("MM\0*", 4)) ||
      starts_with(bytes, std::string_view("II+\0", 4)) ||
      starts_with(bytes, std::string_view("MM\0+", 4))) {
    return ImageFormat::tiff;
  }
  if (starts_with(bytes, "BM")) return ImageFormat::bmp;
  if (bytes.size() >= 3 && at(bytes, 0) == 'P' && at(bytes, 1) >= '1' && at(bytes, 1) <= '6' &&
      is_pnm_space(at(bytes, 2))) {
    return ImageFormat::pnm;
  }
  if (starts_with(bytes, "RIFF") && starts_with(bytes, "WEBP", 8)) return ImageFormat::webp;
  return std::nullopt;
}

std::optional<DeclaredImage> read_declared_image(ImageFormat format,
                                                 std::span<const std::byte> bytes) noexcept {
  switch (format) {
    case ImageFormat::png: return read_png(bytes);
    case ImageFormat::tiff: return read_tiff(bytes);
    case ImageFormat::bmp: return read_bmp(bytes);
    case ImageFormat::pnm: return read_pnm(bytes);
    case ImageFormat::webp: return read_webp(bytes);
    case ImageFormat::jpeg: break;  // kernels/jpeg_header.hpp
  }
  return std::nullopt;
}

}  // namespace svdserve
