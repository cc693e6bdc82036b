#pragma once
// A task's u8 output (HWC, rows of width * channels bytes) as a tensor map: the descriptor that
// lets the copy engine (TMA) store a whole staged tile of the wgmma kernel, 128 rows of 128
// pixels, from one instruction, clipping the rows past the image. Without it the kernel hands
// the copy engine one row at a time, and a bulk copy takes its addresses in uniform registers, so
// 128 threads issuing a row each run a loop of 32 iterations per warp (ncu: 21.5 % of the
// kernel's stall samples at k = 16).
//
// The map sees the output as tile columns: dimension 0 is the 128 * C bytes of one tile row
// (as 32-bit words), dimension 1 the image's whole tile columns, dimension 2 its rows. Its box
// is one tile column's 128 rows, each staged row output_staging_pitch bytes: the pitched rows
// the rounding threads write, whose 16 bytes past the tile row lie outside dimension 0, so the
// copy engine skips them. Why pitched rows and not 128-byte boxes with the 128-byte swizzle: the
// pitch puts a warp's eight rows in eight bank groups just as the swizzle does, but each thread's
// byte offsets are then constants from one base, so a value costs its rounding and one store
// instead of also an address of six instructions per four values; at k = 16 the kernel's time
// follows its instruction count (1.02-1.13x at k = 16, H100).
// A last, partial tile column is outside the map; the kernel's threads store it.
//
// The map is encoded on the host (cuTensorMapEncodeTiled, through the runtime's driver entry
// point, so that nothing links libcuda) into the task itself, which the caller copies to the
// device with the rest of the task table. This header compiles without nvcc.

#include <cuda.h>

#include <cstdint>

#include "kernels/image.hpp"

namespace svdserve::gpu {

struct ReconstructTask;

// A stored tile: 128 pixels (the wgmma kernel's tile) of 128 rows.
inline constexpr uint32_t kOutputTileCols = 128;
inline constexpr uint32_t kOutputTileRows = 128;
// The copy engine's alignment for a map's address and strides, and for a box's row.
inline constexpr uint32_t kOutputMapAlignment = 16;

// Bytes between staged tile rows: a tile row of `channels` bytes a pixel, then 16 more, which
// shift the next row by four banks.
[[nodiscard]] constexpr uint32_t output_staging_pitch(uint32_t channels) {
  return kOutputTileCols * channels + kOutputMapAlignment;
}

// Encodes task.out, a u8 output of `shape`, into task.out_map and sets task.out_map_encoded;
// returns false and leaves it unset where the copy engine cannot address the output (a row that
// is not whole 16-byte chunks, an output not 16-byte aligned, or no whole tile column): the
// kernel's threads then store its tiles. Throws InternalError where the driver refuses a map it
// should take.
bool encode_output_map(ReconstructTask& task, const ImageShape& shape);

}  // namespace svdserve::gpu
