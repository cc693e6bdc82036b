#include "kernels/jpeg_header.hpp"

namespace svdserve {
namespace {

constexpr uint8_t kMarkerPrefix = 0xFF;
constexpr uint8_t kStartOfImage = 0xD8;
constexpr uint8_t kEndOfImage = 0xD9;
constexpr uint8_t kStartOfScan = 0xDA;
constexpr uint8_t kTemporary = 0x01;  // TEM: no length
constexpr uint8_t kFirstRestart = 0xD0, kLastRestart = 0xD7;

[[nodiscard]] uint8_t at(std::span<const std::byte> bytes, std::size_t i) noexcept {
  return static_cast<uint8_t>(bytes[i]);
}

[[nodiscard]] uint32_t big_endian16(std::span<const std::byte> bytes, std::size_t i) noexcept {
  return (uint32_t{at(bytes, i)} << 8) | at(bytes, i + 1);
}

// SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range.
[[nodiscard]] bool is_start_of_frame(uint8_t marker) noexcept {
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

[[nodiscard]] JpegCoding coding_of(uint8_t marker) noexcept {
  switch (marker) {
    case 0xC0: return JpegCoding::baseline;
    case 0xC1: return JpegCoding::extended;
    case 0xC2: return JpegCoding::progressive;
    default: return JpegCoding::other;
  }
}

[[nodiscard]] bool ends_with_end_of_image(std::span<const std::byte> bytes) noexcept {
  std::size_t end = bytes.size();
  while (end > 0 && at(bytes, end - 1) == 0x00) --end;  // some encoders pad with zeros
  return end >= 2 && at(bytes, end - 2) == kMarkerPrefix && at(bytes, end - 1) == kEndOfImage;
}

}  // namespace

std::optional<JpegHeader> read_jpeg_header(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < 4 || at(bytes, 0) != kMarkerPrefix || at(bytes, 1) != kStartOfImage) {
    return std::nullopt;
  }
  std::size_t position = 2;
  while (position + 1 < bytes.size()) {
    if (at(bytes, position) != kMarkerPrefix) return std::nullopt;
    // Any number of 0xFF fill bytes may precede a marker.
    while (position + 1 < bytes.size() && at(bytes, position + 1) == kMarkerPrefix) ++position;
    if (position + 1 >= bytes.size()) return std::nullopt;
    const uint8_t marker = at(bytes, position + 1);
    position += 2;
    if (marker == kTemporary || (marker >= kFirstRestart && marker <= kLastRestart)) continue;
    if (marker == kStartOfImage || marker == kEndOfImage || marker == kStartOfScan) {
      return std::nullopt;  // a frame header must come first
    }
    if (position + 2 > bytes.size()) return std::nullopt;
    const uint32_t length = big_endian16(bytes, position);  // counts its own two bytes
    if (length < 2 || position + length > bytes.size()) return std::nullopt;
    if (is_start_of_frame(marker)) {
      constexpr uint32_t kFrameHeaderBytes = 8;  // length, precision, height, width, components
      if (length < kFrameHeaderBytes) return std::nullopt;
      JpegHeader header;
      header.precision = at(bytes, position + 2);
      header.height = big_endian16(bytes, position + 3);
      header.width = big_endian16(bytes, position + 5);
      header.components = at(bytes, position + 7);
      header.coding = coding_of(marker);
      header.complete = ends_with_end_of_image(bytes);
      // Height 0 defers it to a DNL marker after the first scan: not known from the header.
      if (header.height == 0 || header.width == 0 || header.components == 0) return std::nullopt;
      return header;
    }
    position += length;
  }
  return std::nullopt;
}

}  // namespace svdserve
