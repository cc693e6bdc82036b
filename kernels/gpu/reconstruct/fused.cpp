// The fused reconstruction's entry point: the variant (requested, or the policy's), its checks,
// and its launcher. The kernels are in the variants' files.

#include "kernels/gpu/reconstruct/fused.hpp"

#include <cstdint>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/reconstruct/variants.hpp"

namespace svdserve::gpu {
namespace {

constexpr uint32_t kMaxGridYZ = 65535;

// The image rows that one index of a launch's grid covers (rows: checked as tile64's).
uint32_t grid_tile_rows(FusedVariant variant) noexcept {
  switch (variant) {
    case FusedVariant::tile128: return variants::Tile128::tile_rows();
    case FusedVariant::tensor: return variants::Tensor::tile_rows();
    case FusedVariant::wgmma: return variants::Wgmma::tile_rows();
    case FusedVariant::automatic:
    case FusedVariant::tile64:
    case FusedVariant::rows: break;
  }
  return variants::Tile64::tile_rows();
}

std::string describe(const ReconstructLaunch& launch) {
  return std::string(launch.pixels == OutputPixels::u8 ? "u8" : "f32") + " output, rank " +
         std::to_string(launch.max_rank) +
         (launch.arch == ReconstructArch::sm90a ? ", sm_90a" : ", sm_80") +
         (launch.wgmma_operands ? ", wgmma operands" : ", no wgmma operands");
}

}  // namespace

void launch_fused_reconstruct(const ReconstructTask* tasks_device, uint32_t count,
                              const ImageShape& shape, const ReconstructLaunch& launch,
                              StreamView stream, FusedVariant variant) {
  if (count == 0 || shape.width == 0 || shape.height == 0) return;
  const FusedVariant chosen =
      variant == FusedVariant::automatic ? choose_variant(launch) : variant;
  if (!can_implement(chosen, launch)) {
    throw InvalidArgument(std::string("fused reconstruction: the ") + fused_variant_name(chosen) +
                          " variant cannot run a launch of " + describe(launch));
  }
  const uint32_t tile_rows = grid_tile_rows(chosen);
  const uint32_t row_tiles = (shape.height + tile_rows - 1) / tile_rows;
  if (count > kMaxGridYZ || row_tiles > kMaxGridYZ) {
    throw InvalidArgument("fused reconstruction: " + std::to_string(count) + " tasks of height " +
                          std::to_string(shape.height) + " exceed one launch's grid");
  }
  switch (chosen) {
    case FusedVariant::tile64:
      return variants::Tile64::run(tasks_device, count, shape, launch, stream);
    case FusedVariant::tile128:
      return variants::Tile128::run(tasks_device, count, shape, launch, stream);
    case FusedVariant::rows:
      return variants::Rows::run(tasks_device, count, shape, launch, stream);
    case FusedVariant::tensor:
      return variants::Tensor::run(tasks_device, count, shape, launch, stream);
    case FusedVariant::wgmma:
      return variants::Wgmma::run(tasks_device, count, shape, launch, stream);
    case FusedVariant::automatic: break;
  }
  throw InternalError("fused reconstruction: no variant chosen");
}

}  // namespace svdserve::gpu
