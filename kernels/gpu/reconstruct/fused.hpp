#pragma once
// Rank-k reconstruction on the GPU from resident factors, for a batch of same-shaped images,
// each with its own rank. Two paths with the same inputs and outputs:
//  - fused: one kernel computes US_k * V_k^T tile by tile and writes rounded, clamped u8 (or f32)
//    straight into the interleaved (HWC) output: no intermediate f32 image in device memory;
//  - cuBLAS: one SGEMM per channel into a planar f32 scratch, then a quantise/interleave kernel.
//    The fallback, and the oracle the fused kernel is tested against.
// This header compiles without nvcc.

#include <cublas_v2.h>
#include <cuda.h>

#include <cstdint>
#include <span>

#include "kernels/gpu/common/cuda_resources.hpp"
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
  // of a launch that runs wgmma (fused_variant_for gives wgmma), unused by the other variants.
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

// The fused kernel comes in variants. The first three give bit-identical pixels (same summation
// order, FP32 FMA); tensor and wgmma sum in another order (like cuBLAS, within one level in rare
// values):
//  - tile64:  64 x 64 tiles, 4 x 4 outputs per thread; u8 and f32. Light on registers and shared
//             memory: the better choice where the work is mostly rounding and storing (small k);
//  - tile128: 128 x 128 tiles, 8 x 8 per thread; u8 only (f32 requests run tile64). Fewer
//             shared loads and syncs per FMA than tile64: the FP32 choice for u8 from k = 3;
//  - rows:    4 rows x 16 pixels per thread computed in registers, no shared tile; u8 only.
//             For k = 1 (its factors held in registers), where rounding and storing cost more
//             than the FMAs; other ranks take a slow general path;
//  - tensor:  128 x 128 tiles on the tensor cores (mma.sync TF32, each product split into
//             three so the result keeps FP32 accuracy); u8 only. For larger k;
//  - wgmma:   tensor's tiles and three products per term, in FP16 (FP32 accumulators) on
//             Hopper's asynchronous warpgroup MMA, its operands (ReconstructTask::wgmma_operands,
//             scaled into FP16's range) streamed into shared memory by a producer warp while two
//             consumer warpgroups multiply and store each tile of a whole tile column by one
//             tensor store through the task's out_map where it has one, the rest by their
//             threads (persistent, one block per SM); u8 only, sm_90 devices only (elsewhere it
//             runs tensor);
//  - automatic: by output type and rank (measured fastest): rows for u8 at rank 1, from rank 2
//               wgmma on sm_90, elsewhere tile128 for u8 ranks 2 to 7 and tensor from 8; tile64
//               for f32.
enum class FusedVariant : uint8_t { automatic, tile64, tile128, rows, tensor, wgmma };

[[nodiscard]] const char* fused_variant_name(FusedVariant variant) noexcept;

// Whether the current device runs FusedVariant::wgmma (compute capability 9.0; the kernel is
// built for sm_90a). False without a device.
[[nodiscard]] bool fused_wgmma_supported() noexcept;

// The variant a launch with these arguments runs (never automatic).
[[nodiscard]] FusedVariant fused_variant_for(FusedVariant requested, OutputPixels pixels,
                                             uint32_t max_rank) noexcept;

// tasks_device: `count` ReconstructTask in device memory. max_rank: the largest task rank, and
// never less than any task's (rows compiles rank 1 apart and runs it when max_rank is 1); it also
// picks the variant when `variant` is automatic.
void launch_fused_reconstruct(const ReconstructTask* tasks_device, uint32_t count,
                              const ImageShape& shape, OutputPixels pixels, uint32_t max_rank,
                              StreamView stream, FusedVariant variant = FusedVariant::automatic);

// tasks: host copies. scratch: device floats, at least shape.values() (reused task by task).
void reconstruct_with_cublas(cublasHandle_t cublas, std::span<const ReconstructTask> tasks,
                             const ImageShape& shape, OutputPixels pixels, float* scratch,
                             StreamView stream);

}  // namespace svdserve::gpu
