#pragma once
// Rank-k reconstruction on the GPU from resident factors, for a batch of same-shaped images,
// each with its own rank: one kernel computes US_k V_k^T tile by tile and writes rounded, clamped
// u8 (or f32) straight into the interleaved (HWC) output, with no f32 image in device memory.
// The kernel is one of the variants policy.hpp chooses between. This header compiles without
// nvcc.

#include <cuda.h>

#include <cstdint>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

// Device layout of one image's factors (GpuFactors): for each channel c,
//   US_c = U_c * diag(S_c): column-major height x rank_kept, at us + c * height * rank_kept
//   V_c:                    column-major width  x rank_kept, at v  + c * width  * rank_kept
// so that channel c of the image is A_c = US_c V_c^T (row i, column j of the image).
struct ReconstructTask {
  const float* us = nullptr;
  const float* v = nullptr;
  uint32_t rank = 0;       // terms used: 1..rank_kept
  uint32_t rank_kept = 0;  // leading dimension in rank units
  void* out = nullptr;     // device; shape.values() u8 or f32, row-major, channels interleaved
  // The same factors as the wgmma variant reads them (wgmma_operands.hpp): required in every task
  // of a launch that runs wgmma (ReconstructLaunch::wgmma_operands), unused by the others.
  const void* wgmma_operands = nullptr;
  // `out` as a tensor map for the wgmma variant's copy engine (output_tensor_map.hpp), valid
  // where out_map_encoded: encode_output_map sets both for an output the copy engine can address.
  // Without it (an output not 16-byte aligned, rows that are not whole 16-byte chunks, narrower
  // than one tile of 128 pixels, or a caller that skipped it) the wgmma kernel's threads store
  // its tiles, as they store the last, partial tile column of an output that has one; at the
  // same pixels.
  uint32_t out_map_encoded = 0;
  CUtensorMap out_map{};
};

// Runs `count` tasks (tasks_device: ReconstructTask in device memory) of one output type on
// `variant`, or where it is automatic on the policy's choice for `launch` (policy.hpp). Throws
// InvalidArgument where the variant cannot implement the launch, for more than four channels,
// and for more tasks or tile rows than one launch's grid holds.
void launch_fused_reconstruct(const ReconstructTask* tasks_device, uint32_t count,
                              const ImageShape& shape, const ReconstructLaunch& launch,
                              StreamView stream, FusedVariant variant = FusedVariant::automatic);

}  // namespace svdserve::gpu
