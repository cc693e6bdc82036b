#pragma once
// Named barriers (bar.sync / bar.arrive; PTX ISA, "Parallel Synchronization and Communication"):
// barrier `id` (1-15; 0 is __syncthreads) completes once kThreads threads, a multiple of 32,
// have arrived. sync waits for that; arrive counts itself and goes on. The wgmma kernel syncs one
// consumer warpgroup with them and starts its second consumer behind the first
// (wgmma.cu); the kernel benchmark's loop alone staggers its consumers alike.

#include <cstdint>

namespace svdserve::gpu::detail {

template <uint32_t kThreads>
__device__ __forceinline__ void sync_named_barrier(uint32_t id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(kThreads) : "memory");
}

template <uint32_t kThreads>
__device__ __forceinline__ void arrive_named_barrier(uint32_t id) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "n"(kThreads) : "memory");
}

}  // namespace svdserve::gpu::detail
