#pragma once
// Hopper's bulk copy from global to shared memory (cp.async.bulk, the copy engine behind TMA),
// completed on a shared-memory barrier (mbarrier): one thread asks for a contiguous block, the
// copy engine writes it through the async proxy (where wgmma reads its operands, so no proxy
// fence is needed between them), and the barrier's phase flips when the bytes have landed.
//
// Rules (PTX ISA, "cp.async.bulk" and "mbarrier"): addresses 16-byte aligned, the size a multiple
// of 16; a barrier is initialised by one thread and made visible (fence_barrier_init, then a
// block barrier) before use; a phase completes when its expected arrivals have arrived and its
// expected bytes have landed; waiters name the phase by its parity.
//
// sm_90 only. Callers keep a path for older GPUs under `#if SVDSERVE_HAS_BULK_STORE`.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_store.cuh"

namespace svdserve::gpu::detail {

#if SVDSERVE_HAS_BULK_STORE

__device__ __forceinline__ void init_barrier(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)),
               "r"(arrivals)
               : "memory");
}

// The initialisations of this thread, visible to the block's threads and the copy engine.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void wait_barrier(uint64_t* barrier, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(shared_address(barrier)),
      "r"(parity)
      : "memory");
}

// The issuing thread's arrival on `barrier`, which then also waits for `bytes` to land.
__device__ __forceinline__ void arrive_expecting(uint64_t* barrier, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                   shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

// The calling thread's arrival on `barrier` (one of the arrivals its phase expects).
__device__ __forceinline__ void arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(barrier))
               : "memory");
}

// The copy of `bytes` from global `source` to shared `destination`, counted off on `barrier` as
// they land (which must expect them: arrive_expecting).
__device__ __forceinline__ void bulk_load(void* destination, const void* source, uint32_t bytes,
                                          uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(shared_address(destination)),
      "l"(source), "r"(bytes), "r"(shared_address(barrier))
      : "memory");
}

#endif  // SVDSERVE_HAS_BULK_STORE

}  // namespace svdserve::gpu::detail
