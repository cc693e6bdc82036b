#pragma once
// What a rank-k reconstruction costs and how far it is from the original: the figures a contact
// sheet prints under each tile.

#include <cstdint>

#include <opencv2/core.hpp>

namespace svdserve::cli {

// Bytes of the fp32 factors U (h x k), S (k) and Vt (k x w) of every channel: what the server
// keeps for rank k (the count of factor_bytes_f32 in kernels/factors.hpp).
[[nodiscard]] constexpr std::uint64_t factor_bytes(std::uint32_t width, std::uint32_t height,
                                                   std::uint32_t channels, std::uint32_t rank) noexcept {
  return std::uint64_t{channels} * rank * (std::uint64_t{height} + width + 1) * sizeof(float);
}

// Bytes of the original's 8-bit pixels.
[[nodiscard]] constexpr std::uint64_t pixel_bytes(std::uint32_t width, std::uint32_t height,
                                                  std::uint32_t channels) noexcept {
  return std::uint64_t{width} * height * channels;
}

// ||original - reconstruction||_F / ||original||_F over all channels, in double; 0 when both are
// all zeros (infinity when only the original is). Throws std::invalid_argument when the sizes or channel counts differ.
[[nodiscard]] double relative_error(const cv::Mat& original, const cv::Mat& reconstruction);

}  // namespace svdserve::cli
