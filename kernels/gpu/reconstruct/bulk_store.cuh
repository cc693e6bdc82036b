#pragma once
// Hopper's bulk copy from shared to global memory (cp.async.bulk, the copy engine behind TMA),
// for the fused reconstruction kernels: threads write their packed pixels into shared memory laid
// out like the output, one thread hands a contiguous run of it to the copy engine and the warps
// go on. The output bytes then leave the SM as whole lines without a load-store round trip per
// 16 bytes through the threads (what a copy-out loop costs: a shared load, a global store and its
// address per 16 bytes, and the latency of both on the warp's critical path).
//
// Rules (PTX ISA, "cp.async.bulk"): global and shared addresses 16-byte aligned, the size a
// multiple of 16; the threads' shared-memory writes made visible to the copy engine's "async
// proxy" by fence.proxy.async before the issuing thread sees them (fence, then the warp or block
// barrier, then the issue); and the shared memory may not be reused, nor the block exit, before
// the copy engine has read it (wait_bulk_reads by the issuing thread).
//
// sm_90 only. Callers keep a path for older GPUs under `#if SVDSERVE_HAS_BULK_STORE`.

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SVDSERVE_HAS_BULK_STORE 1
#else
#define SVDSERVE_HAS_BULK_STORE 0
#endif

namespace svdserve::gpu::detail {

inline constexpr uint32_t kBulkAlignment = 16;

#if SVDSERVE_HAS_BULK_STORE

// A shared-memory pointer as the 32-bit shared-window address the PTX instructions take.
[[nodiscard]] __device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// This thread's earlier shared-memory writes, visible to bulk copies issued after a barrier.
__device__ __forceinline__ void fence_shared_for_bulk_copy() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Queues the copy of `bytes` (a multiple of 16) from shared `source` to global `destination`
// (both 16-byte aligned) in this thread's current bulk group.
__device__ __forceinline__ void bulk_store(void* destination, const void* source,
                                           uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :
               : "l"(destination), "r"(shared_address(source)), "r"(bytes)
               : "memory");
}

// Closes this thread's current bulk group.
__device__ __forceinline__ void commit_bulk_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until the copy engine has read the sources of all of this thread's committed bulk groups
// (the global writes complete on their own; the kernel's end orders them before later work).
__device__ __forceinline__ void wait_bulk_reads() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

#endif  // SVDSERVE_HAS_BULK_STORE

}  // namespace svdserve::gpu::detail
