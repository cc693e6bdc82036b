#pragma once
// The copy engine's tensor store (cp.async.bulk.tensor, TMA) of a staged tile, through a task's
// output tensor map (output_tensor_map.hpp).
//
// The staging tile is kOutputTileRows rows of output_staging_pitch(C) bytes, 128-byte aligned:
// tile row r's 128 * C bytes at r * pitch, then 16 bytes the store skips (they lie outside the
// map's first dimension).
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

#include "kernels/gpu/reconstruct/bulk_store.cuh"
#include "kernels/gpu/reconstruct/output_tensor_map.hpp"

namespace svdserve::gpu::detail {

inline constexpr uint32_t kStagingAlignment = 128;  // a tensor store's shared source

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

// Stores a staged tile, the map's whole tile column `tile_col` from row row0 (rows past the
// image clipped by the copy engine), from shared `staging` by one tensor store, in its own bulk
// group. The caller fenced and synchronised the staging's writers, and acquired the map; it
// waits for the reads (wait_bulk_reads) before it writes the staging again.
__device__ __forceinline__ void tensor_store_tile(const CUtensorMap* map, uint32_t tile_col,
                                                  uint32_t row0, const unsigned char* staging) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
      :
      : "l"(reinterpret_cast<uint64_t>(map)), "r"(0U), "r"(tile_col), "r"(row0),
        "r"(shared_address(staging))
      : "memory");
  commit_bulk_group();
}

#endif  // SVDSERVE_HAS_BULK_STORE

}  // namespace svdserve::gpu::detail
