#include "kernels/cpu/blas_kernels.hpp"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>

// OpenBLAS's own way to choose a core: read OPENBLAS_CORETYPE and point its dispatch table at
// that core's kernels, as it does once at load time. Weak: absent from builds without
// DYNAMIC_ARCH, where the kernels are fixed at build time and nothing can be switched.
extern "C" void gotoblas_dynamic_init(void) __attribute__((weak));
extern "C" void gotoblas_dynamic_quit(void) __attribute__((weak));

namespace svdserve::cpu_blas {

std::string better_core(std::string_view detected, CpuFeatures cpu) {
  // OpenBLAS's x86-64 cores with AVX2 kernels or newer: anything else is a fallback here.
  static constexpr std::array<std::string_view, 6> kModern = {
      "haswell", "zen", "excavator", "skylakex", "cooperlake", "sapphirerapids"};
  std::string name(detected);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::ranges::find(kModern, name) != kModern.end()) return "";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

std::string core_name() { return openblas_get_corename(); }

std::string use_best_kernels() {
  static std::once_flag once;
  static std::string action;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice stands
    if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return;
    const std::string detected = core_name();
    const std::string core = better_core(detected, host_cpu_features());
    if (core.empty()) return;
    ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    action = "OpenBLAS did not recognise this CPU (it chose " + detected + "); using its " +
             core_name() + " kernels";
  });
  return action;
}

}  // namespace svdserve::cpu_blas
