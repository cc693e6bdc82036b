#pragma once
// What a JPEG's markers say before any entropy-coded data is read: its size, components and
// coding. The loader reads it to route a JPEG (the GPU backend decodes the ones nvJPEG takes, on
// the device; OpenCV everything else) and to refuse an oversized image before decoding it.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace svdserve {

enum class JpegCoding : uint8_t {
  baseline,     // SOF0
  extended,     // SOF1: sequential Huffman, 8 or 12 bits
  progressive,  // SOF2
  other,        // lossless, arithmetic, hierarchical
};

struct JpegHeader {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t components = 0;  // 1 grey, 3 YCbCr (or RGB), 4 CMYK/YCCK
  uint32_t precision = 0;   // bits per sample
  JpegCoding coding = JpegCoding::other;
  // An EOI marker follows the frame header (bytes after it allowed): a truncated upload has none.
  bool complete = false;
  // Everything up to the first scan's data is well formed: quantisation and Huffman tables that
  // can be built, a frame header whose components name defined tables, and a scan header that
  // names frame components and defined tables. Only such files reach a decoder on the device.
  bool well_formed = false;
};

// The header of a JPEG stream (SOI, then markers up to the first SOF), or nullopt when the bytes
// are not a JPEG or its markers are malformed or truncated before the frame header. Reads the
// marker segments up to the first scan's data (for well_formed), never the entropy-coded data.
[[nodiscard]] std::optional<JpegHeader> read_jpeg_header(std::span<const std::byte> bytes) noexcept;

}  // namespace svdserve
