#pragma once
// A task's u8 output (HWC, rows of width * channels bytes) as a tensor map: the descriptor that
// lets the copy engine (TMA) store a whole tile of the wgmma kernel, 128 rows of up to 128
// bytes a box, from one instruction, clipping what lies past the image. Without it the kernel
// hands the copy engine one row at a time, and a bulk copy takes its addresses in uniform
// registers, so 128 threads issuing a row each run a loop of 32 turns per warp (ncu, session 20:
// 21.5 % of the kernel's stall samples at k = 16).
//
// The box is 128 bytes wide so that the staging tile can be swizzled (CU_TENSOR_MAP_SWIZZLE_128B,
// the widest span TMA swizzles): each 16-byte chunk of a 128-byte staging row is XOR-ed with the
// row's index mod 8, so the rounding threads, which write eight rows at once, hit eight different
// banks (tensor_store.cuh has the layout). A tile row of C channels is C boxes.
//
// The map is encoded on the host (cuTensorMapEncodeTiled, through the runtime's driver entry
// point, so that nothing links libcuda) into the task itself, which the caller copies to the
// device with the rest of the task table. This header compiles without nvcc.

#include <cuda.h>

#include <cstdint>

#include "kernels/image.hpp"

namespace svdserve::gpu {

struct ReconstructTask;

// The box: 128 bytes (the 128-byte swizzle's span) of 128 rows (the wgmma kernel's tile).
inline constexpr uint32_t kOutputBoxBytes = 128;
inline constexpr uint32_t kOutputBoxRows = 128;
// The copy engine's alignment for a map's address and row stride.
inline constexpr uint32_t kOutputMapAlignment = 16;

// Encodes task.out, a u8 output of `shape`, into task.out_map and sets task.out_map_encoded;
// returns false and leaves it unset where the copy engine cannot address the output (a row that
// is not whole 16-byte chunks, or an output not 16-byte aligned): the kernel's threads then store
// its tiles. Throws InternalError where the driver refuses a map it should take.
bool encode_output_map(ReconstructTask& task, const ImageShape& shape);

}  // namespace svdserve::gpu
