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

// Output pixel encodings a backend writes. Both are interleaved (HWC), row-major.
enum class OutputPixels {
  u8,   // round to nearest, clamp to 0..255
  f32,  // unclamped
};

[[nodiscard]] constexpr std::size_t bytes_per_value(OutputPixels p) noexcept {
  return p == OutputPixels::u8 ? 1 : 4;
}

}  // namespace svdserve
