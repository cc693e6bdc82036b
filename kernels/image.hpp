#pragma once
// A decoded image as the compute backends see it: float32, one row-major height x width plane
// per channel (planar), values on the 0..255 scale whatever the source depth was.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace svdserve {

struct ImageShape {
  uint32_t width = 0;
  uint32_t height = 0;
  uint32_t channels = 0;

  [[nodiscard]] std::size_t pixels_per_channel() const noexcept {
    return std::size_t{width} * height;
  }
  [[nodiscard]] std::size_t values() const noexcept { return pixels_per_channel() * channels; }
  [[nodiscard]] uint32_t full_rank() const noexcept { return width < height ? width : height; }
  friend bool operator==(const ImageShape&, const ImageShape&) = default;
};

struct ImageF32 {
  ImageShape shape;
  std::vector<float> planes;  // channels * height * width; plane c starts at c * height * width.

  [[nodiscard]] std::span<const float> plane(uint32_t channel) const noexcept {
    const std::size_t n = shape.pixels_per_channel();
    return {planes.data() + channel * n, n};
  }
  [[nodiscard]] std::span<float> plane(uint32_t channel) noexcept {
    const std::size_t n = shape.pixels_per_channel();
    return {planes.data() + channel * n, n};
  }
};

// Samples as a decoder produces them. Values map onto the backends' 0..255 float scale: u8 as is,
// u16 times 255/65535, f32 as is.
enum class SampleType : uint8_t { u8, u16, f32 };

[[nodiscard]] constexpr std::size_t bytes_per_sample(SampleType type) noexcept {
  return type == SampleType::u8 ? 1 : type == SampleType::u16 ? 2 : 4;
}
[[nodiscard]] constexpr float sample_scale(SampleType type) noexcept {
  return type == SampleType::u16 ? 255.0f / 65535.0f : 1.0f;
}

// An image on its way into a backend: interleaved (HWC, row-major) samples, exactly as decoded.
// The backend makes its own float32 planes from it, the GPU backend on the device, so that only
// 1- or 2-byte samples cross PCIe and the loader threads do no per-pixel work.
struct DecodedImage {
  ImageShape shape;
  SampleType type = SampleType::u8;
  std::vector<std::byte> samples;  // shape.values() * bytes_per_sample(type)
  // Instead of samples, for a backend that decodes JPEG itself (Backend::decodes_jpeg): the
  // file's bytes, with shape from its header and u8 samples once decoded.
  std::vector<std::byte> jpeg;

  [[nodiscard]] bool is_jpeg() const noexcept { return !jpeg.empty(); }
};

// Host conversions (image_convert.cpp): the CPU backend's way in, and a way for callers that hold
// float planes (tests, benchmarks) to make a DecodedImage (f32 samples, so nothing is rounded).
[[nodiscard]] ImageF32 to_planes(const DecodedImage& image);
[[nodiscard]] DecodedImage to_decoded(const ImageF32& image);

// Output pixel encodings a backend writes. Both are interleaved (HWC), row-major.
enum class OutputPixels {
  u8,   // round to nearest, clamp to 0..255
  f32,  // unclamped
};

[[nodiscard]] constexpr std::size_t bytes_per_value(OutputPixels p) noexcept {
  return p == OutputPixels::u8 ? 1 : 4;
}

}  // namespace svdserve
