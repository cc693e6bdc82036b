#pragma once
// One-line backend calls for the tests of backends over several devices: one image decomposed,
// a batch of images reconstructed (ranks rank, rank-1, ... in turn) into u8 pixels.

#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.hpp"

namespace svdserve::test {

[[nodiscard]] inline std::shared_ptr<const Factors> decompose_one(Backend& backend,
                                                                  const ImageF32& image,
                                                                  uint32_t rank) {
  const ImageF32* images[] = {&image};
  return backend.decompose(std::span<const ImageF32* const>(images), rank).front();
}

// Rank of item i: rank - i % rank_steps.
[[nodiscard]] inline std::vector<std::vector<std::byte>> reconstruct_all(
    Backend& backend, const std::vector<std::shared_ptr<const Factors>>& factors, uint32_t rank,
    uint32_t rank_steps) {
  std::vector<std::vector<std::byte>> pixels;
  std::vector<ReconstructItem> items;
  pixels.reserve(factors.size());
  for (std::size_t i = 0; i < factors.size(); ++i) {
    pixels.emplace_back(factors[i]->shape().values());
    items.push_back({factors[i].get(), rank - static_cast<uint32_t>(i % rank_steps),
                     OutputPixels::u8, pixels.back()});
  }
  backend.reconstruct(items);
  return pixels;
}

}  // namespace svdserve::test
