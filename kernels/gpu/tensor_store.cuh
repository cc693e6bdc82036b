#pragma once
// The copy engine's tensor store (cp.async.bulk.tensor, TMA) of a staged tile, through a task's
// output tensor map (output_tensor_map.hpp), and the swizzled staging layout it reads.
//
// The staging tile of C channels is C boxes of kOutputBoxRows rows x kOutputBoxBytes bytes, box
// b holding bytes 128b .. 128b + 127 of each tile row, 1024-byte aligned. In a box, the 16-byte
// chunk q of row r lies at chunk q ^ (r mod 8) (CU_TENSOR_MAP_SWIZZLE_128B): the 32 lanes of a
// rounding warp write 8 rows at once (wgmma's accumulator layout), and with unswizzled 128-byte
// rows all 8 would be in the same banks.
//
// Rules as for bulk_store.cuh: the writers' fence.proxy.async before the issuing thread's barrier,
// and wait_bulk_reads by the issuing thread before the staging is written again or the block
// exits. The tensor map is in global memory (the task table), copied there by the host before
// the launch; the issuing thread acquires it (acquire_tensor_map) before its first use.
//
// sm_90 only (SVDSERVE_HAS_BULK_STORE).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gpu/bulk_store.cuh"
#include "kernels/gpu/output_tensor_map.hpp"

namespace svdserve::gpu::detail {

inline constexpr uint32_t kSwizzleRows = 8;         // the XOR takes the row mod 8
inline constexpr uint32_t kSwizzleChunkBytes = 16;  // and moves 16-byte chunks
inline constexpr uint32_t kStagingBoxBytes = kOutputBoxBytes * kOutputBoxRows;  // one box
inline constexpr uint32_t kSwizzleAlignment = 1024;  // a box's address, for the 128-byte swizzle

// Where byte `b` of tile row `row` lies in a swizzled staging tile (the row's boxes, then the
// chunk's place in the row's 128 bytes).
[[nodiscard]] __device__ __forceinline__ uint32_t swizzled_offset(uint32_t row, uint32_t b) {
  const uint32_t in_box = (b % kOutputBoxBytes) ^ (row % kSwizzleRows * kSwizzleChunkBytes);
  return b / kOutputBoxBytes * kStagingBoxBytes + row * kOutputBoxBytes + in_box;
}

#if SVDSERVE_HAS_BULK_STORE

// Makes a tensor map that the host copied into global memory visible to this thread's tensor
// copies. Why: the task table is reused launch after launch at the same address, and the copy
// engine may still hold the descriptor it read there before (the CUDA programming guide requires
// this fence, at system scope, for maps written by cudaMemcpy).
__device__ __forceinline__ void acquire_tensor_map(const CUtensorMap* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;"
               :
               : "l"(reinterpret_cast<uint64_t>(map))
               : "memory");
}

// Queues the store of one box from shared `source` (1024-byte aligned) to the map's bytes
// x .. x + 127 of rows y .. y + 127 (clipped at the image's edges) in this thread's current bulk
// group.
__device__ __forceinline__ void tensor_store_box(const CUtensorMap* map, uint32_t x, uint32_t y,
                                                 const void* source) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
      :
      : "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(shared_address(source))
      : "memory");
}

// Stores a staged, swizzled tile whose first pixel is (row0, col0) of the map's image (rows of
// row_bytes = width x kChannels): a tensor store per box inside the image (the copy engine clips a
// box at the image's edges), one bulk group. The caller fenced and synchronised the staging's
// writers, and acquired the map; it waits for the reads (wait_bulk_reads) before it writes the
// staging again.
template <uint32_t kChannels>
__device__ __forceinline__ void tensor_store_tile(const CUtensorMap* map, uint32_t row0,
                                                  uint32_t col0, uint32_t row_bytes,
                                                  const unsigned char* staging) {
#pragma unroll
  for (uint32_t box = 0; box < kChannels; ++box) {
    const uint32_t x = col0 * kChannels + box * kOutputBoxBytes;
    if (x < row_bytes) tensor_store_box(map, x, row0, staging + box * kStagingBoxBytes);
  }
  commit_bulk_group();
}

#endif  // SVDSERVE_HAS_BULK_STORE

}  // namespace svdserve::gpu::detail
