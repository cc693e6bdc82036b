#pragma once
// Small files that lie to a decoder: headers declaring sizes their data does not hold, in each
// format the server decodes, and valid files of formats it must not decode. Header-only, no
// GoogleTest: the server's unit tests and the integration tests share it.

#include <cstdint>
#include <string>
#include <string_view>

namespace svdserve::test {

inline void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

inline void append_be(std::string& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// PNG's chunk CRC (ISO 3309, the same as zlib's crc32).
inline uint32_t png_crc(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char byte : bytes) {
    crc ^= static_cast<uint8_t>(byte);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::string png_chunk(std::string_view type, std::string_view data) {
  std::string chunk;
  append_be(chunk, data.size(), 4);
  const std::string typed = std::string(type) + std::string(data);
  chunk += typed;
  append_be(chunk, png_crc(typed), 4);
  return chunk;
}

// Signature and IHDR of a PNG (colour type 0 grey, 2 RGB, 6 RGBA; 8 or 16 bits per sample):
// what comes before IDAT.
inline std::string png_header(uint32_t width, uint32_t height, uint8_t colour_type = 0,
                              uint8_t bit_depth = 8) {
  std::string header("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  append_be(ihdr, width, 4);
  append_be(ihdr, height, 4);
  ihdr += std::string{static_cast<char>(bit_depth), static_cast<char>(colour_type), '\0', '\0',
                      '\0'};
  return header + png_chunk("IHDR", ihdr);
}

// A PNG whose IDAT holds a few bytes of a zlib stream, then IEND.
inline std::string png_declaring(uint32_t width, uint32_t height) {
  return png_header(width, height) + png_chunk("IDAT", std::string("\x78\x9c\x63\x00\x00", 5)) +
         png_chunk("IEND", "");
}

// A grey, uncompressed TIFF (classic, one strip) whose strip is 16 bytes; Intel ("II") or
// Motorola ("MM") byte order.
inline std::string tiff_declaring(uint32_t width, uint32_t height, bool big_endian = false) {
  constexpr uint32_t kShort = 3, kLong = 4;
  constexpr uint32_t kEntries = 9;
  constexpr uint32_t kIfdOffset = 8;
  constexpr uint32_t kDataOffset = kIfdOffset + 2 + 12 * kEntries + 4;
  std::string tiff = big_endian ? std::string("MM\0*", 4) : std::string("II*\0", 4);
  const auto append = [&](uint64_t value, int bytes) {
    big_endian ? append_be(tiff, value, bytes) : append_le(tiff, value, bytes);
  };
  append(kIfdOffset, 4);
  append(kEntries, 2);
  auto entry = [&](uint32_t tag, uint32_t type, uint32_t value) {
    append(tag, 2);
    append(type, 2);
    append(1, 4);
    append(value, type == kShort ? 2 : 4);  // a SHORT sits in the first two bytes of the field
    if (type == kShort) append(0, 2);
  };
  entry(256, kLong, width);                 // ImageWidth
  entry(257, kShort, height & 0xFFFF);      // ImageLength, as a SHORT
  entry(258, kShort, 8);                    // BitsPerSample
  entry(259, kShort, 1);                    // Compression: none
  entry(262, kShort, 1);                    // Photometric: BlackIsZero
  entry(273, kLong, kDataOffset);           // StripOffsets
  entry(277, kShort, 1);                    // SamplesPerPixel
  entry(278, kLong, height);                // RowsPerStrip
  entry(279, kLong, width * height);        // StripByteCounts
  append(0, 4);                             // no next IFD
  tiff += std::string(16, '\0');
  return tiff;
}

// The same as a BigTIFF (64-bit offsets).
inline std::string bigtiff_declaring(uint32_t width, uint32_t height) {
  constexpr uint32_t kShort = 3, kLong = 4;
  constexpr uint64_t kEntries = 9;
  constexpr uint64_t kIfdOffset = 16;
  constexpr uint64_t kDataOffset = kIfdOffset + 8 + 20 * kEntries + 8;
  std::string tiff("II+\0", 4);
  append_le(tiff, 8, 2);  // bytes per offset
  append_le(tiff, 0, 2);
  append_le(tiff, kIfdOffset, 8);
  append_le(tiff, kEntries, 8);
  auto entry = [&](uint32_t tag, uint32_t type, uint64_t value) {
    append_le(tiff, tag, 2);
    append_le(tiff, type, 2);
    append_le(tiff, 1, 8);
    append_le(tiff, value, 8);
  };
  entry(256, kLong, width);
  entry(257, kLong, height);
  entry(258, kShort, 8);
  entry(259, kShort, 1);
  entry(262, kShort, 1);
  entry(273, kLong, kDataOffset);
  entry(277, kShort, 1);
  entry(278, kLong, height);
  entry(279, kLong, uint64_t{width} * height);
  append_le(tiff, 0, 8);
  tiff += std::string(16, '\0');
  return tiff;
}

// A 24-bit BMP (BITMAPINFOHEADER) with no pixel data.
inline std::string bmp_declaring(uint32_t width, uint32_t height) {
  constexpr uint32_t kHeaders = 14 + 40;
  std::string bmp("BM");
  append_le(bmp, kHeaders, 4);
  append_le(bmp, 0, 4);
  append_le(bmp, kHeaders, 4);
  append_le(bmp, 40, 4);
  append_le(bmp, width, 4);
  append_le(bmp, height, 4);
  append_le(bmp, 1, 2);   // planes
  append_le(bmp, 24, 2);  // bits per pixel
  bmp += std::string(24, '\0');
  return bmp;
}

// A binary PGM (P5) with a comment in its header and 16 bytes of samples.
inline std::string pgm_declaring(uint32_t width, uint32_t height) {
  return "P5\n# made by a test\n" + std::to_string(width) + " " + std::to_string(height) +
         "\n255\n" + std::string(16, '\x40');
}

// A lossless WebP (VP8L) declaring width x height (at most 16384 each), with no image data.
inline std::string webp_lossless_declaring(uint32_t width, uint32_t height) {
  std::string chunk("\x2f", 1);
  append_le(chunk, uint64_t{width - 1} | (uint64_t{height - 1} << 14), 4);
  std::string webp("RIFF");
  append_le(webp, 4 + 8 + chunk.size(), 4);
  webp += "WEBPVP8L";
  append_le(webp, chunk.size(), 4);
  return webp + chunk;
}

// An extended WebP (VP8X) whose canvas is width x height (up to 2^24 each), with no frame.
inline std::string webp_extended_declaring(uint32_t width, uint32_t height) {
  std::string chunk(4, '\0');  // flags, reserved
  append_le(chunk, width - 1, 3);
  append_le(chunk, height - 1, 3);
  std::string webp("RIFF");
  append_le(webp, 4 + 8 + chunk.size(), 4);
  webp += "WEBPVP8X";
  append_le(webp, chunk.size(), 4);
  return webp + chunk;
}

// Formats OpenCV reads and the server does not: valid 8x8 files, and a Radiance header alone
// (OpenCV decodes Radiance through a temporary file, which it leaves behind when the size it
// declares is over OpenCV's own limits).
inline std::string radiance_hdr_header(uint32_t width, uint32_t height) {
  return "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y " + std::to_string(height) + " +X " +
         std::to_string(width) + "\n";
}

inline std::string radiance_hdr_8x8() {
  std::string hdr = radiance_hdr_header(8, 8);
  for (int i = 0; i < 64; ++i) hdr += std::string{'\x80', '\x80', '\x80', '\x81'};
  return hdr;
}

inline std::string pfm_8x8() {
  std::string pfm = "Pf\n8 8\n-1.0\n";
  for (int i = 0; i < 64; ++i) append_le(pfm, 0x3F000000, 4);  // 0.5f
  return pfm;
}

inline std::string pam_8x8() {
  return "P7\nWIDTH 8\nHEIGHT 8\nDEPTH 1\nMAXVAL 255\nTUPLTYPE GRAYSCALE\nENDHDR\n" +
         std::string(64, '\x40');
}

inline std::string sun_raster_8x8() {
  std::string ras;
  append_be(ras, 0x59A66A95, 4);
  for (uint32_t value : {8u, 8u, 8u, 64u, 1u, 0u, 0u}) append_be(ras, value, 4);
  return ras + std::string(64, '\x40');
}

}  // namespace svdserve::test
