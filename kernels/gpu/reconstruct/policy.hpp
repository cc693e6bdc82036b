#pragma once
// Which fused reconstruction kernel runs a launch: architecture x output type x rank x operand
// availability -> variant. Each variant says whether it can implement a launch (can_implement);
// choose_variant picks among those, by the measurements it cites. This header compiles without
// nvcc.

#include <cstdint>

#include "kernels/image.hpp"

namespace svdserve::gpu {

// The variants (one kernel family each, one file each in this folder):
//  - tile64:  64 x 64 tiles, 4 x 4 FP32 outputs per thread; f32 output only;
//  - tile128: 128 x 128 tiles, 8 x 8 FP32 outputs per thread; u8 only;
//  - rows:    4 rows x 16 pixels per thread from factors held in registers; u8 at rank 1 only;
//  - tensor:  tile128's tiles on mma.sync TF32, three products per term (3xTF32) for FP32
//             accuracy; u8 only;
//  - wgmma:   tensor's tiles and three products per term in FP16 on Hopper's warpgroup MMA,
//             persistent and warp-specialised, fed from the factors' wgmma operands; u8 only,
//             sm_90a only, and only where every task has its operands.
// tile64, tile128 and rows sum each output in the same order (k = 0, 1, ..., one FMA each) and
// give identical pixels; tensor and wgmma sum in another order (a u8 pixel may differ by one
// level at a .5 boundary, as against cuBLAS).
enum class FusedVariant : uint8_t { automatic, tile64, tile128, rows, tensor, wgmma };

[[nodiscard]] const char* fused_variant_name(FusedVariant variant) noexcept;

// The architectures the policy tells apart. The build holds sm_80 and sm_90a code and compute_90
// PTX, so every device that runs it is one of:
//  - sm80:  mma.sync TF32 (A100, and any device that runs the PTX or lacks the sm_90a code);
//  - sm90a: plus wgmma and the copy engine's bulk and tensor copies (H100, H200).
enum class ReconstructArch : uint8_t { sm80, sm90a };

// Whether the current device runs the sm_90a code (compute capability 9.0 and code built with
// wgmma, not compute_90 PTX). Probed once per device; false without a device.
[[nodiscard]] bool fused_wgmma_supported() noexcept;

[[nodiscard]] ReconstructArch current_reconstruct_arch() noexcept;

// What decides a launch's variant.
struct ReconstructLaunch {
  ReconstructArch arch = ReconstructArch::sm80;
  OutputPixels pixels = OutputPixels::u8;
  uint32_t max_rank = 0;        // the largest task rank, never less than any task's
  bool wgmma_operands = false;  // every task has its ReconstructTask::wgmma_operands
};

// Whether `variant` runs `launch` (automatic: always).
[[nodiscard]] bool can_implement(FusedVariant variant, const ReconstructLaunch& launch) noexcept;

// The variant that runs `launch` when none is requested (never automatic).
[[nodiscard]] FusedVariant choose_variant(const ReconstructLaunch& launch) noexcept;

// Whether decompose writes the wgmma operands on a device of `arch`: where the policy can
// choose wgmma.
[[nodiscard]] bool wants_wgmma_operands(ReconstructArch arch) noexcept;

}  // namespace svdserve::gpu
