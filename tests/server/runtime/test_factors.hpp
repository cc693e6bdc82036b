#pragma once
// Factors that hold nothing but a shape, a rank and a byte count: enough for the batcher, the
// store and a fake backend, which never look inside U and Vt.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/factors.hpp"

namespace svdserve::fakes {

class TestFactors final : public Factors {
 public:
  // Singular values rank_kept, rank_kept-1, ..., 1 in every channel (never all zero).
  TestFactors(ImageShape shape, uint32_t rank_kept, std::size_t bytes)
      : Factors(shape, rank_kept, descending_values(shape.channels, rank_kept), 0.0), bytes_(bytes) {}

  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return bytes_; }

 private:
  static std::vector<std::vector<float>> descending_values(uint32_t channels, uint32_t rank) {
    std::vector<std::vector<float>> values(channels);
    for (auto& channel : values) {
      for (uint32_t i = 0; i < rank; ++i) channel.push_back(static_cast<float>(rank - i));
    }
    return values;
  }

  std::size_t bytes_;
};

[[nodiscard]] inline std::shared_ptr<const Factors> make_test_factors(ImageShape shape,
                                                                      uint32_t rank_kept,
                                                                      std::size_t bytes) {
  return std::make_shared<TestFactors>(shape, rank_kept, bytes);
}

}  // namespace svdserve::fakes
