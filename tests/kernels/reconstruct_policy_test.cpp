// The fused reconstruction's policy (kernels/gpu/reconstruct/policy.hpp): which variant each
// architecture, output type, rank and operand availability gets, and which variants can run
// which launch. Host only: it runs without a device, for both architectures.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"

namespace svdserve::test {
namespace {

using gpu::FusedVariant;
using gpu::ReconstructArch;
using gpu::ReconstructLaunch;

constexpr FusedVariant kVariants[] = {FusedVariant::tile64, FusedVariant::tile128,
                                      FusedVariant::rows, FusedVariant::tensor,
                                      FusedVariant::wgmma};
constexpr uint32_t kRanks[] = {1, 2, 3, 7, 8, 16, 47, 48, 256};

ReconstructLaunch launch(ReconstructArch arch, OutputPixels pixels, uint32_t max_rank,
                         bool wgmma_operands) {
  return {.arch = arch, .pixels = pixels, .max_rank = max_rank, .wgmma_operands = wgmma_operands};
}

std::string describe(const ReconstructLaunch& l) {
  return std::string(l.arch == ReconstructArch::sm90a ? "sm_90a" : "sm_80") +
         (l.pixels == OutputPixels::u8 ? ", u8" : ", f32") + ", rank " +
         std::to_string(l.max_rank) + (l.wgmma_operands ? ", operands" : ", no operands");
}

TEST(ReconstructPolicy, Sm90aWithOperandsRunsRowsAtRankOneAndWgmmaFromTwo) {
  EXPECT_EQ(gpu::choose_variant(launch(ReconstructArch::sm90a, OutputPixels::u8, 1, true)),
            FusedVariant::rows);
  for (const uint32_t rank : {2U, 3U, 7U, 8U, 16U, 47U, 48U, 256U}) {
    EXPECT_EQ(gpu::choose_variant(launch(ReconstructArch::sm90a, OutputPixels::u8, rank, true)),
              FusedVariant::wgmma)
        << "rank " << rank;
  }
}

// Samples FP16 operands cannot hold: tensor wherever wgmma would have run, tile128 nowhere.
TEST(ReconstructPolicy, Sm90aWithoutOperandsRunsTensorFromRankTwo) {
  EXPECT_EQ(gpu::choose_variant(launch(ReconstructArch::sm90a, OutputPixels::u8, 1, false)),
            FusedVariant::rows);
  for (const uint32_t rank : {2U, 3U, 7U, 8U, 16U, 256U}) {
    EXPECT_EQ(gpu::choose_variant(launch(ReconstructArch::sm90a, OutputPixels::u8, rank, false)),
              FusedVariant::tensor)
        << "rank " << rank;
  }
}

TEST(ReconstructPolicy, Sm80RunsRowsThenTile128UpToRankSevenThenTensor) {
  for (const bool operands : {false, true}) {
    EXPECT_EQ(gpu::choose_variant(launch(ReconstructArch::sm80, OutputPixels::u8, 1, operands)),
              FusedVariant::rows);
    for (const uint32_t rank : {2U, 3U, 7U}) {
      EXPECT_EQ(
          gpu::choose_variant(launch(ReconstructArch::sm80, OutputPixels::u8, rank, operands)),
          FusedVariant::tile128)
          << "rank " << rank;
    }
    for (const uint32_t rank : {8U, 16U, 47U, 48U, 256U}) {
      EXPECT_EQ(
          gpu::choose_variant(launch(ReconstructArch::sm80, OutputPixels::u8, rank, operands)),
          FusedVariant::tensor)
          << "rank " << rank;
    }
  }
}

TEST(ReconstructPolicy, F32RunsTile64Everywhere) {
  for (const ReconstructArch arch : {ReconstructArch::sm80, ReconstructArch::sm90a}) {
    for (const bool operands : {false, true}) {
      for (const uint32_t rank : kRanks) {
        const ReconstructLaunch l = launch(arch, OutputPixels::f32, rank, operands);
        EXPECT_EQ(gpu::choose_variant(l), FusedVariant::tile64) << describe(l);
      }
    }
  }
}

// What each variant can run, and that the policy only ever chooses one that can.
TEST(ReconstructPolicy, VariantsImplementWhatTheyDeclare) {
  for (const ReconstructArch arch : {ReconstructArch::sm80, ReconstructArch::sm90a}) {
    for (const OutputPixels pixels : {OutputPixels::u8, OutputPixels::f32}) {
      for (const bool operands : {false, true}) {
        for (const uint32_t rank : kRanks) {
          const ReconstructLaunch l = launch(arch, pixels, rank, operands);
          SCOPED_TRACE(describe(l));
          const bool u8 = pixels == OutputPixels::u8;
          EXPECT_EQ(gpu::can_implement(FusedVariant::tile64, l), !u8);
          EXPECT_EQ(gpu::can_implement(FusedVariant::tile128, l), u8);
          EXPECT_EQ(gpu::can_implement(FusedVariant::rows, l), u8 && rank == 1);
          EXPECT_EQ(gpu::can_implement(FusedVariant::tensor, l), u8);
          EXPECT_EQ(gpu::can_implement(FusedVariant::wgmma, l),
                    u8 && operands && arch == ReconstructArch::sm90a);
          EXPECT_TRUE(gpu::can_implement(FusedVariant::automatic, l));
          const FusedVariant chosen = gpu::choose_variant(l);
          EXPECT_NE(chosen, FusedVariant::automatic);
          EXPECT_TRUE(gpu::can_implement(chosen, l)) << gpu::fused_variant_name(chosen);
        }
      }
    }
  }
}

TEST(ReconstructPolicy, DecomposeWritesWgmmaOperandsOnSm90aOnly) {
  EXPECT_TRUE(gpu::wants_wgmma_operands(ReconstructArch::sm90a));
  EXPECT_FALSE(gpu::wants_wgmma_operands(ReconstructArch::sm80));
}

TEST(ReconstructPolicy, VariantNames) {
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::automatic), "automatic");
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::tile64), "tile64");
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::tile128), "tile128");
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::rows), "rows");
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::tensor), "tensor");
  EXPECT_STREQ(gpu::fused_variant_name(FusedVariant::wgmma), "wgmma");
}

// A requested variant that cannot run the launch is refused before anything reaches the device
// (no device needed: nothing is launched).
TEST(ReconstructPolicy, LaunchRefusesAVariantThatCannotImplementIt) {
  const ImageShape shape{8, 8, 3};
  const gpu::StreamView stream{};
  const auto refused = [&](FusedVariant variant, const ReconstructLaunch& l) {
    EXPECT_THROW(gpu::launch_fused_reconstruct(nullptr, 1, shape, l, stream, variant),
                 InvalidArgument)
        << gpu::fused_variant_name(variant) << ": " << describe(l);
  };
  for (const FusedVariant variant : kVariants) {
    for (const ReconstructArch arch : {ReconstructArch::sm80, ReconstructArch::sm90a}) {
      for (const OutputPixels pixels : {OutputPixels::u8, OutputPixels::f32}) {
        for (const bool operands : {false, true}) {
          for (const uint32_t rank : {1U, 2U, 64U}) {
            const ReconstructLaunch l = launch(arch, pixels, rank, operands);
            if (!gpu::can_implement(variant, l)) refused(variant, l);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace svdserve::test
