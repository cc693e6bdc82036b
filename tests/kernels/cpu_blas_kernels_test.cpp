// OpenBLAS's kernel choice: a fallback to pre-AVX2 kernels on a newer CPU is switched to the
// kernels the CPU runs, the switch leaves BLAS computing correct results, and a core OpenBLAS
// recognised or one the user named stays.

#include <cblas.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/blas_kernels.hpp"

extern "C" void gotoblas_dynamic_init(void);
extern "C" void gotoblas_dynamic_quit(void);

namespace svdserve::cpu_blas {
namespace {

constexpr CpuFeatures kAvx512{.avx2_fma = true, .avx512 = true};
constexpr CpuFeatures kAvx2{.avx2_fma = true, .avx512 = false};
constexpr CpuFeatures kSse{};

TEST(BlasKernelsTest, FallbackCoresAreReplacedByTheNewestKernelsTheCpuRuns) {
  EXPECT_EQ(better_core("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(better_core("nehalem", kAvx512), "SkylakeX");
  EXPECT_EQ(better_core("sandybridge", kAvx2), "Haswell");
  EXPECT_EQ(better_core("core2", kAvx2), "Haswell");
}

TEST(BlasKernelsTest, RecognisedCoresAndOldCpusKeepTheirKernels) {
  for (const char* core : {"Haswell", "Zen", "SkylakeX", "Cooperlake", "sapphirerapids"}) {
    EXPECT_EQ(better_core(core, kAvx512), "") << core;
  }
  EXPECT_EQ(better_core("Haswell", kAvx2), "");
  EXPECT_EQ(better_core("prescott", kSse), "");
}

[[nodiscard]] std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// sgemm of a 67 x 45 by 45 x 33 product against a float64 loop: the kernels in use compute.
[[nodiscard]] bool sgemm_correct() {
  const int m = 67;
  const int n = 33;
  const int k = 45;
  std::vector<float> a(m * k);
  std::vector<float> b(k * n);
  std::vector<float> c(m * n, -1.0F);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 37) % 101) / 101.0F - 0.5F;
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 53) % 97) / 97.0F - 0.5F;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0F, a.data(), k, b.data(),
              n, 0.0F, c.data(), n);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double expected = 0.0;
      for (int p = 0; p < k; ++p) expected += double{a[i * k + p]} * b[p * n + j];
      if (std::abs(c[i * n + j] - expected) > 1e-5) return false;
    }
  }
  return true;
}

// Exit codes of the child process that plays a CPU OpenBLAS fell back on.
constexpr int kSwitched = 0;
constexpr int kFallbackNotSimulated = 2;
constexpr int kNotSwitched = 3;
constexpr int kWrongResults = 4;

[[noreturn]] void simulate_fallback_and_repair() {
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  ::unsetenv("OPENBLAS_CORETYPE");
  if (lower(core_name()) != "prescott") std::_Exit(kFallbackNotSimulated);
  const std::string expected = lower(better_core("prescott", host_cpu_features()));
  if (use_best_kernels().empty() || lower(core_name()) != expected) std::_Exit(kNotSwitched);
  std::_Exit(sgemm_correct() ? kSwitched : kWrongResults);
}

TEST(BlasKernelsTest, AFallbackOnThisCpuIsSwitchedToItsKernelsAndStillComputes) {
  if (!host_cpu_features().avx2_fma) GTEST_SKIP() << "this CPU has no AVX2: Prescott is its core";
  // A fresh process: the switch happens once per process, and this one may have made it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(simulate_fallback_and_repair(), testing::ExitedWithCode(kSwitched), "");
}

[[noreturn]] void name_a_core_then_select() {
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  // The variable stays set: the user named this core.
  const bool kept = use_best_kernels().empty() && lower(core_name()) == "prescott";
  std::_Exit(kept && sgemm_correct() ? kSwitched : kNotSwitched);
}

TEST(BlasKernelsTest, ACoreTheUserNamedIsKept) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(name_a_core_then_select(), testing::ExitedWithCode(kSwitched), "");
}

}  // namespace
}  // namespace svdserve::cpu_blas
