#pragma once
// OpenBLAS chooses its compute kernels for the CPU it recognises at load time. Debian 12's
// OpenBLAS 0.3.21 does not recognise CPUs released after it (the GPU hosts' Xeons, family 6
// model 207) and falls back to its SSE3 "Prescott" kernels: the randomized SVD of a 1024² plane
// then takes 95 ms instead of 26 ms with the SkylakeX (AVX-512) kernels on the same core.

#include <string>
#include <string_view>

#include "kernels/cpu/cpu_features.hpp"

namespace svdserve::cpu_blas {

// The OPENBLAS_CORETYPE to use instead of the detected core (as OpenBLAS names it), or ""
// to keep it: only where detection fell back to kernels older than the CPU's AVX2 or AVX-512.
[[nodiscard]] std::string better_core(std::string_view detected, CpuFeatures cpu);

// The core whose kernels OpenBLAS uses now.
[[nodiscard]] std::string core_name();

// Switches OpenBLAS to better_core() once per process, unless the user set OPENBLAS_CORETYPE or
// the OpenBLAS linked is not a DYNAMIC_ARCH build. Call before any BLAS call runs; later calls
// do nothing. Returns what it did, for the startup log ("" when nothing).
std::string use_best_kernels();

}  // namespace svdserve::cpu_blas
