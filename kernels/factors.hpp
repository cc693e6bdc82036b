#pragma once
// The truncated SVD of one image, per channel: A_c ~= U_c diag(S_c) Vt_c with rank_kept terms.
// Where U and Vt live (host or device memory) is the backend's business; the singular values
// are always on the host because requests need them to pick ranks and report errors.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/image.hpp"

namespace svdserve {

// The largest Frobenius norm of a plane the float32 solvers take. Singular values are at most the
// norm and a randomized sketch's entries about sqrt(width) <= 256 times it, so 2^16 below float32's
// largest value keeps every intermediate and every factor finite.
inline constexpr double kMaxPlaneFrobeniusNorm = std::numeric_limits<float>::max() / 65536.0;

// The error for a plane over that norm, or whose factors came out non-finite all the same.
[[nodiscard]] inline InvalidArgument values_too_large(std::size_t image, uint32_t channel) {
  return InvalidArgument("the values of image " + std::to_string(image) + ", channel " +
                         std::to_string(channel) +
                         ", are too large: their singular values would overflow float32 (the "
                         "plane's Frobenius norm must stay below 5e33); scale the samples down");
}

class Factors {
 public:
  // energy: ||A||_F^2 over all channels of the image that was decomposed, so errors and energy
  // fractions stay exact when only rank_kept < full rank triplets are kept.
  Factors(ImageShape shape, uint32_t rank_kept, std::vector<std::vector<float>> singular_values,
          double energy)
      : shape_(shape),
        rank_kept_(rank_kept),
        singular_values_(std::move(singular_values)),
        energy_(energy) {}
  virtual ~Factors() = default;
  Factors(const Factors&) = delete;
  Factors& operator=(const Factors&) = delete;

  [[nodiscard]] const ImageShape& shape() const noexcept { return shape_; }
  [[nodiscard]] uint32_t rank_kept() const noexcept { return rank_kept_; }
  // Largest first, rank_kept values.
  [[nodiscard]] std::span<const float> singular_values(uint32_t channel) const noexcept {
    return singular_values_[channel];
  }
  [[nodiscard]] const std::vector<std::vector<float>>& all_singular_values() const noexcept {
    return singular_values_;
  }
  [[nodiscard]] double energy() const noexcept { return energy_; }
  // Bytes this image holds in the backend's memory (U, S, Vt for every channel).
  [[nodiscard]] virtual std::size_t bytes_resident() const noexcept = 0;
  // Which device of a multi-device backend holds them (its index there); 0 with one device.
  [[nodiscard]] virtual std::size_t device() const noexcept { return 0; }

 private:
  ImageShape shape_;
  uint32_t rank_kept_;
  std::vector<std::vector<float>> singular_values_;
  double energy_;
};

// Bytes of fp32 factors U (h x r), S (r), Vt (r x w) for every channel.
[[nodiscard]] constexpr std::size_t factor_bytes_f32(const ImageShape& shape, uint32_t rank) noexcept {
  return std::size_t{shape.channels} * rank * (std::size_t{shape.height} + shape.width + 1) *
         sizeof(float);
}

}  // namespace svdserve
