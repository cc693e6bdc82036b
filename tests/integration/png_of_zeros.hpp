#pragma once
// A PNG of zeros, compressed a row at a time: a few hundred KiB of file for hundreds of MiB of
// pixels, the cheapest way to ask a server for a lot of work. Needs zlib.

#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/hostile_images.hpp"

namespace svdserve::testing {

// colour_type as PNG's IHDR says it (0 grey, 2 RGB, 6 RGBA), bit_depth 8 or 16.
inline std::string png_of_zeros(uint32_t width, uint32_t height, uint8_t colour_type = 2,
                                uint8_t bit_depth = 8) {
  const std::size_t channels = colour_type == 6 ? 4 : colour_type == 2 ? 3 : 1;
  z_stream stream{};
  deflateInit(&stream, Z_BEST_COMPRESSION);
  // Filter byte "none", then the row's samples.
  std::vector<unsigned char> row(1 + std::size_t{width} * channels * (bit_depth / 8), 0);
  std::string compressed;
  std::vector<unsigned char> out(1 << 16);
  for (uint32_t y = 0; y <= height; ++y) {
    const bool last = y == height;
    stream.next_in = last ? nullptr : row.data();
    stream.avail_in = last ? 0 : static_cast<uInt>(row.size());
    do {
      stream.next_out = out.data();
      stream.avail_out = static_cast<uInt>(out.size());
      deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      compressed.append(reinterpret_cast<const char*>(out.data()), out.size() - stream.avail_out);
    } while (stream.avail_out == 0);
  }
  deflateEnd(&stream);
  return svdserve::test::png_header(width, height, colour_type, bit_depth) +
         svdserve::test::png_chunk("IDAT", compressed) + svdserve::test::png_chunk("IEND", "");
}

}  // namespace svdserve::testing
