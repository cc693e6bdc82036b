#pragma once
// How the CPU backend decomposes, as the configuration asks (config.proto's cpu_svd).

namespace svdserve {

enum class CpuSvdMethod {
  automatic,  // randomized where the rank kept is small against the image, exact elsewhere
  exact,      // LAPACK sgesdd for every plane
};

}  // namespace svdserve
