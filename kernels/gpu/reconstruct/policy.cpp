#include "kernels/gpu/reconstruct/policy.hpp"

#include "kernels/gpu/reconstruct/variants.hpp"

namespace svdserve::gpu {
namespace {

// Evidence: svdserve_reconstruct_bench on the H100, 3 channels, 256² to 4096² and 1920x1080.
constexpr uint32_t kRankOne = 1;
constexpr uint32_t kTensorMinRank = 8;  // k=8: tensor 1.06-1.13x tile128; ties at k=6 (H100)

}  // namespace

const char* fused_variant_name(FusedVariant variant) noexcept {
  switch (variant) {
    case FusedVariant::automatic: return "automatic";
    case FusedVariant::tile64: return "tile64";
    case FusedVariant::tile128: return "tile128";
    case FusedVariant::rows: return "rows";
    case FusedVariant::tensor: return "tensor";
    case FusedVariant::wgmma: return "wgmma";
  }
  return "unknown";
}

ReconstructArch current_reconstruct_arch() noexcept {
  return fused_wgmma_supported() ? ReconstructArch::sm90a : ReconstructArch::sm80;
}

bool can_implement(FusedVariant variant, const ReconstructLaunch& launch) noexcept {
  switch (variant) {
    case FusedVariant::automatic: return true;
    case FusedVariant::tile64: return variants::Tile64::can_implement(launch);
    case FusedVariant::tile128: return variants::Tile128::can_implement(launch);
    case FusedVariant::rows: return variants::Rows::can_implement(launch);
    case FusedVariant::tensor: return variants::Tensor::can_implement(launch);
    case FusedVariant::wgmma: return variants::Wgmma::can_implement(launch);
  }
  return false;
}

FusedVariant choose_variant(const ReconstructLaunch& launch) noexcept {
  // tile128's f32 staging tile (256 KiB at 4 channels) would not fit shared memory.
  if (launch.pixels == OutputPixels::f32) return FusedVariant::tile64;
  // k=1: rows 81-92 % of the floor, tile128 56-68 % (H100).
  if (launch.max_rank <= kRankOne) return FusedVariant::rows;
  if (launch.arch == ReconstructArch::sm90a) {
    // k=2-7: 1.02-1.38x tile128; k>=8: 1.05-1.34x tensor, ties it at multiples of 16 (H100).
    if (launch.wgmma_operands) return FusedVariant::wgmma;
    // Samples past FP16's range: wgmma's tiles and summation on TF32, which has FP32's range.
    return FusedVariant::tensor;
  }
  // k=16 and up: tensor 1.36-1.54x tile128 (H100).
  return launch.max_rank < kTensorMinRank ? FusedVariant::tile128 : FusedVariant::tensor;
}

bool wants_wgmma_operands(ReconstructArch arch) noexcept {
  return variants::Wgmma::can_implement(
      {.arch = arch, .pixels = OutputPixels::u8, .max_rank = kRankOne + 1, .wgmma_operands = true});
}

}  // namespace svdserve::gpu
