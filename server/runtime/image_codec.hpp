#pragma once
// Turning a job's image source (encoded bytes, raw samples or a file) into a decoded image
// (interleaved 8-bit, 16-bit or float samples; the backend makes its float32 matrices from them,
// on the GPU when there is one), and reconstructed pixels into PNG or JPEG. Decoding runs on the
// loader threads, encoding on the encoder threads; OpenCV does both.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "kernels/image.hpp"
#include "kernels/jpeg_header.hpp"
#include "server/runtime/job.hpp"

namespace svdserve {

struct ImageLimits {
  uint32_t max_width = 8192;
  uint32_t max_height = 8192;
  std::size_t max_bytes = 60u << 20;
};

// Whether the backend decodes this JPEG itself (Backend::decodes_jpeg); empty: never.
using DeviceJpegFilter = std::function<bool(const JpegHeader&)>;

// Told an image's shape once its header has passed the limits, before any decoding (channels:
// the fewest its header allows, DeclaredImage::min_channels); throws to refuse the image.
using ShapeCheck = std::function<void(const ImageShape& shape)>;

// Decodes encoded bytes (PNG, JPEG, TIFF, BMP, PNM or WebP, by their magic bytes), takes raw
// pixels or reads and decodes a file (a regular one, its size checked before it is read:
// image_file.hpp), checking sizes, channels and (for float samples) finiteness. Throws
// InvalidArgument with a message that names what is wrong. The samples keep their type; see
// SampleType for how they map onto the 0..255 scale. Every format is checked against the size
// limits from its header, before any decoding (image_format.hpp), then by `admit`; a JPEG that
// `device_decodes` accepts is not decoded here but passed on as DecodedImage::jpeg.
[[nodiscard]] DecodedImage decode_image(const ImageSource& source, const ImageLimits& limits,
                                        const DeviceJpegFilter& device_decodes = {},
                                        const ShapeCheck& admit = {});
[[nodiscard]] DecodedImage decode_encoded(std::span<const std::byte> encoded,
                                          const ImageLimits& limits,
                                          const DeviceJpegFilter& device_decodes = {},
                                          const ShapeCheck& admit = {});

// PNG of interleaved u8 pixels (1, 3 or 4 channels in OpenCV's BGR(A) order).
[[nodiscard]] std::string encode_png(std::span<const std::byte> pixels, const ImageShape& shape);

// JPEG of interleaved u8 pixels (1 or 3 channels, BGR) at quality 1..100. Throws InvalidArgument
// for 4 channels (see check_output_format).
[[nodiscard]] std::string encode_jpeg(std::span<const std::byte> pixels, const ImageShape& shape,
                                      uint32_t quality);

// Throws InvalidArgument when `format` cannot hold an image of `shape`: JPEG has no alpha, and
// dropping it silently would answer a different image than the one asked for.
void check_output_format(OutputFormat format, const ImageShape& shape);

}  // namespace svdserve
