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

// Whether an end-of-image marker follows `from`. Searched from the end: bytes after it (camera
// makers' trailers, padding) are allowed, as libjpeg allows them; a file cut off in its scan has
// none, since entropy-coded data stuffs every 0xFF with 0x00.
[[nodiscard]] bool has_end_of_image_after(std::span<const std::byte> bytes,
                                          std::size_t from) noexcept {
  for (std::size_t end = bytes.size(); end >= from + 2; --end) {
    if (at(bytes, end - 2) == kMarkerPrefix && at(bytes, end - 1) == kEndOfImage) return true;
  }
  return false;
}

// Tables defined so far, by id (0..3).
struct Tables {
  bool quantisation[4] = {};
  bool dc[4] = {};
  bool ac[4] = {};
};

struct FrameComponent {
  uint8_t id = 0;
  uint8_t quantisation = 0;
};

// DQT: precision (8 or 16 bit) and id, then 64 entries; several tables per segment.
[[nodiscard]] bool read_quantisation(std::span<const std::byte> segment, Tables& tables) noexcept {
  std::size_t p = 0;
  while (p < segment.size()) {
    const uint8_t precision = at(segment, p) >> 4, id = at(segment, p) & 0x0F;
    const std::size_t size = 1 + 64 * (precision == 0 ? 1 : 2);
    if (precision > 1 || id > 3 || p + size > segment.size()) return false;
    tables.quantisation[id] = true;
    p += size;
  }
  return true;
}

// DHT: class and id, 16 code counts, the symbols; several tables per segment. The counts must
// describe a prefix code (Kraft) of at most 256 symbols.
[[nodiscard]] bool read_huffman(std::span<const std::byte> segment, Tables& tables) noexcept {
  constexpr std::size_t kCounts = 16;
  constexpr uint32_t kMaxSymbols = 256;
  std::size_t p = 0;
  while (p < segment.size()) {
    if (p + 1 + kCounts > segment.size()) return false;
    const uint8_t table_class = at(segment, p) >> 4, id = at(segment, p) & 0x0F;
    if (table_class > 1 || id > 3) return false;
    uint32_t symbols = 0, codes = 0;
    for (std::size_t length = 0; length < kCounts; ++length) {
      const uint32_t count = at(segment, p + 1 + length);
      codes = codes * 2 + count;  // codes used at this length, counted at the next
      if (codes > (uint32_t{2} << length)) return false;
      symbols += count;
    }
    if (symbols > kMaxSymbols || p + 1 + kCounts + symbols > segment.size()) return false;
    (table_class == 0 ? tables.dc : tables.ac)[id] = true;
    p += 1 + kCounts + symbols;
  }
  return true;
}

}  // namespace

std::optional<JpegHeader> read_jpeg_header(std::span<const std::byte> bytes) noexcept {
  if (bytes.size() < 4 || at(bytes, 0) != kMarkerPrefix || at(bytes, 1) != kStartOfImage) {
    return std::nullopt;
  }
  std::optional<JpegHeader> header;
  Tables tables;
  FrameComponent components[4];
  bool structure_ok = true;
  std::size_t position = 2;
  while (position + 1 < bytes.size()) {
    if (at(bytes, position) != kMarkerPrefix) break;
    // Any number of 0xFF fill bytes may precede a marker.
    while (position + 1 < bytes.size() && at(bytes, position + 1) == kMarkerPrefix) ++position;
    if (position + 1 >= bytes.size()) break;
    const uint8_t marker = at(bytes, position + 1);
    position += 2;
    if (marker == kTemporary || (marker >= kFirstRestart && marker <= kLastRestart)) continue;
    if (marker == kStartOfImage || marker == kEndOfImage) break;
    if (position + 2 > bytes.size()) break;
    const uint32_t length = big_endian16(bytes, position);  // counts its own two bytes
    if (length < 2 || position + length > bytes.size()) break;
    const std::span<const std::byte> segment = bytes.subspan(position + 2, length - 2);
    position += length;

    if (marker == 0xDB) {
      structure_ok = structure_ok && read_quantisation(segment, tables);
    } else if (marker == 0xC4) {
      structure_ok = structure_ok && read_huffman(segment, tables);
    } else if (is_start_of_frame(marker)) {
      if (header || segment.size() < 6) break;  // one frame per image
      JpegHeader frame;
      frame.precision = at(segment, 0);
      frame.height = big_endian16(segment, 1);
      frame.width = big_endian16(segment, 3);
      frame.components = at(segment, 5);
      frame.coding = coding_of(marker);
      frame.complete = has_end_of_image_after(bytes, position);
      // Height 0 defers it to a DNL marker after the first scan: not known from the header.
      if (frame.height == 0 || frame.width == 0 || frame.components == 0) return std::nullopt;
      header = frame;
      constexpr std::size_t kBytesPerComponent = 3;  // id, sampling factors, quantisation table
      structure_ok = structure_ok && frame.components <= 4 &&
                     segment.size() == 6 + kBytesPerComponent * frame.components;
      for (uint32_t c = 0; structure_ok && c < frame.components; ++c) {
        const uint8_t sampling = at(segment, 6 + 3 * c + 1);
        const uint8_t horizontal = sampling >> 4, vertical = sampling & 0x0F;
        components[c] = {at(segment, 6 + 3 * c), at(segment, 6 + 3 * c + 2)};
        structure_ok = horizontal >= 1 && horizontal <= 4 && vertical >= 1 && vertical <= 4 &&
                       components[c].quantisation <= 3;
      }
    } else if (marker == kStartOfScan) {
      if (!header) return std::nullopt;  // a frame header must come first
      const uint32_t count = segment.empty() ? 0 : at(segment, 0);
      bool scan_ok = structure_ok && count >= 1 && count <= header->components &&
                     segment.size() == 4 + 2 * std::size_t{count};
      for (uint32_t s = 0; scan_ok && s < count; ++s) {
        const uint8_t id = at(segment, 1 + 2 * s);
        const uint8_t dc = at(segment, 2 + 2 * s) >> 4, ac = at(segment, 2 + 2 * s) & 0x0F;
        const FrameComponent* component = nullptr;
        for (uint32_t c = 0; c < header->components; ++c) {
          if (components[c].id == id) component = &components[c];
        }
        scan_ok = component != nullptr && tables.quantisation[component->quantisation] &&
                  dc <= 3 && ac <= 3 && tables.dc[dc] && tables.ac[ac];
      }
      header->well_formed = scan_ok;
      return header;  // entropy-coded data follows: not read
    }
  }
  return header;  // no scan: not well formed
}

}  // namespace svdserve
