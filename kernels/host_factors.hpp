#pragma once
// One image's factors in host memory, in the layout the factor repository keeps whatever the
// backend: per channel U (height x rank_kept, row-major), S (rank_kept, largest first) and Vt
// (rank_kept x width, row-major). Backends copy their own factors out to it and back.

#include <cstdint>
#include <vector>

#include "kernels/image.hpp"

namespace svdserve {

struct HostFactors {
  ImageShape shape;
  uint32_t rank_kept = 0;
  double energy = 0.0;  // ||A||_F^2 over all channels, as Factors::energy()
  std::vector<std::vector<float>> u;                // per channel, height * rank_kept
  std::vector<std::vector<float>> singular_values;  // per channel, rank_kept
  std::vector<std::vector<float>> vt;               // per channel, rank_kept * width
};

}  // namespace svdserve
