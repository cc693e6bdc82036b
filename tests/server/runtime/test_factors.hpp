#pragma once
// Factors that hold nothing but a shape, a rank and a byte count: enough for the batcher, the
// store and a fake backend, which never look inside U and Vt.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/factors.hpp"
#include "server/runtime/factor_store.hpp"

namespace svdserve::fakes {

class TestFactors final : public Factors {
 public:
  // Singular values rank_kept, rank_kept-1, ..., 1 in every channel (never all zero).
  TestFactors(ImageShape shape, uint32_t rank_kept, std::size_t bytes, std::size_t device = 0)
      : Factors(shape, rank_kept, descending_values(shape.channels, rank_kept), 0.0),
        bytes_(bytes),
        device_(device) {}

  [[nodiscard]] std::size_t bytes_resident() const noexcept override { return bytes_; }
  [[nodiscard]] std::size_t device() const noexcept override { return device_; }

 private:
  static std::vector<std::vector<float>> descending_values(uint32_t channels, uint32_t rank) {
    std::vector<std::vector<float>> values(channels);
    for (auto& channel : values) {
      for (uint32_t i = 0; i < rank; ++i) channel.push_back(static_cast<float>(rank - i));
    }
    return values;
  }

  std::size_t bytes_;
  std::size_t device_;
};

[[nodiscard]] inline std::shared_ptr<const Factors> make_test_factors(ImageShape shape,
                                                                      uint32_t rank_kept,
                                                                      std::size_t bytes,
                                                                      std::size_t device = 0) {
  return std::make_shared<TestFactors>(shape, rank_kept, bytes, device);
}

// Store limits that count the factors' bytes alone (no entry cost), as TestFactors report them,
// so that budgets read in round numbers.
[[nodiscard]] inline FactorStoreLimits factors_only_limits(std::size_t budget,
                                                           FullStoreAction when_full,
                                                           std::size_t evicted_history) {
  FactorStoreLimits limits;
  limits.budget_bytes = budget;
  limits.when_full = when_full;
  limits.evicted_history = evicted_history;
  limits.entry_cost = {.bytes = 0, .bytes_per_id_byte = 0};
  return limits;
}

}  // namespace svdserve::fakes
