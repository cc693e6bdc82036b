#pragma once
// The CPU backend's factors: fp32 in host memory, per channel U (height x rank_kept, row-major),
// S (in Factors) and Vt (rank_kept x width, row-major). Vt's first k rows are Vt_k as they are;
// U_k is the first k columns of U, with leading dimension rank_kept.

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/factors.hpp"
#include "kernels/image.hpp"

namespace svdserve {

struct CpuChannelFactors {
  AlignedVector<float> u;   // height x rank_kept
  AlignedVector<float> vt;  // rank_kept x width
};

class CpuFactors final : public Factors {
 public:
  CpuFactors(ImageShape shape, uint32_t rank_kept, std::vector<std::vector<float>> singular_values,
             std::vector<CpuChannelFactors> channels, double energy)
      : Factors(shape, rank_kept, std::move(singular_values), energy),
        channels_(std::move(channels)) {}

  [[nodiscard]] const CpuChannelFactors& channel(uint32_t channel) const noexcept {
    return channels_[channel];
  }
  [[nodiscard]] std::size_t bytes_resident() const noexcept override {
    return factor_bytes_f32(shape(), rank_kept());
  }

 private:
  std::vector<CpuChannelFactors> channels_;
};

}  // namespace svdserve
