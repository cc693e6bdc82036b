#pragma once
// The x86-64 instruction sets the CPU backend's code paths are chosen by, queried at run time:
// the build itself stays portable x86-64. Each set names exactly the features its code is
// compiled for (the target attributes in reconstruct.cpp), so the check and the code agree on
// GCC and Clang alike.

namespace svdserve {

struct CpuFeatures {
  bool avx2_fma = false;  // AVX2 and FMA (OpenBLAS's Haswell kernels, our avx2 path)
  bool avx512 = false;    // also AVX-512 F, BW, DQ and VL (SkylakeX kernels, our avx512 path)
};

[[nodiscard]] inline CpuFeatures host_cpu_features() noexcept {
  CpuFeatures features;
#if defined(__x86_64__)
  __builtin_cpu_init();
  features.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  features.avx512 = features.avx2_fma && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512vl");
#endif
  return features;
}

}  // namespace svdserve
