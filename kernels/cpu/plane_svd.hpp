#pragma once
// What an SVD of one plane gives the CPU backend, whichever solver made it.

#include <cstdint>
#include <vector>

#include "kernels/cpu/factors.hpp"

namespace svdserve {

struct PlaneSvd {
  CpuChannelFactors factors;           // U (height x rank) and Vt (rank x width), row-major
  std::vector<float> singular_values;  // rank values, largest first
};

}  // namespace svdserve
