#pragma once
// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a only), for the wgmma reconstruction kernel
// (wgmma.cu, FP16 operands) and svdserve_reconstruct_bench, which measures the
// instruction's peak on FP16 and, for reference, TF32 operands.
//
// Unlike mma.sync, the four warps of a warpgroup hand one 64 x N x K product to the tensor cores
// and go on: operands come straight from shared memory (no fragment loads in the warps), and the
// warps wait for the result only when they need it (wait_wgmma). The rules (PTX ISA,
// "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
//  - operands here are K-major: row r of A (or column n of B) has its k values contiguous;
//  - a shared-memory write by the threads becomes visible to wgmma (the "async proxy") through
//    fence.proxy.async by the writer, then a barrier, then the wgmma;
//  - fence_wgmma_operands before the first wgmma after the threads touched its accumulators;
//  - the accumulators may not be read, nor the operands' shared memory rewritten, before the
//    wgmma's group is waited for.
//
// Shared-memory layout without swizzling (the descriptor's "interleave" mode): the operand is cut
// into core matrices of 8 rows x 16 bytes (4 TF32 or 8 FP16 values of k), each 128 contiguous
// bytes, row r of the core matrix at byte 16 r. The descriptor gives the distance between core
// matrices next to each other along k (leading byte offset) and along the rows (stride byte
// offset). One k-step is 32 bytes of a row in both arithmetics (k8 TF32, k16 FP16), so both use
// the same layout and offsets.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_store.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SVDSERVE_HAS_WGMMA 1
#else
#define SVDSERVE_HAS_WGMMA 0
#endif

namespace svdserve::gpu::detail {

inline constexpr uint32_t kWgmmaRows = 64;        // m64
inline constexpr uint32_t kWgmmaCols = 128;       // n128
inline constexpr uint32_t kWgmmaDepth = 8;        // k8 for TF32
inline constexpr uint32_t kWgmmaF16Depth = 16;    // k16 for FP16
inline constexpr uint32_t kWarpgroupThreads = 128;
inline constexpr uint32_t kWgmmaAccumulators = kWgmmaRows * kWgmmaCols / kWarpgroupThreads;
inline constexpr uint32_t kCoreMatrixBytes = 128;  // 8 rows x 16 bytes
// An operand of one k-step (8 TF32 or 16 FP16 values of k a row) laid out K-major as 8-row
// groups of two core matrices: the next 16 bytes of k are a core matrix further, the next 8 rows
// two.
inline constexpr uint32_t kKStepLeadingBytes = kCoreMatrixBytes;
inline constexpr uint32_t kKStepStrideBytes = 2 * kCoreMatrixBytes;
inline constexpr double kWgmmaFlops = 2.0 * kWgmmaRows * kWgmmaCols * kWgmmaDepth;
inline constexpr double kWgmmaF16Flops = 2.0 * kWgmmaRows * kWgmmaCols * kWgmmaF16Depth;

// The 64-bit matrix descriptor: start address, leading and stride byte offsets (all >> 4),
// swizzle mode 0 (none).
[[nodiscard]] __device__ __forceinline__ uint64_t wgmma_descriptor(const void* shared,
                                                                   uint32_t leading_bytes,
                                                                   uint32_t stride_bytes) {
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  constexpr uint32_t kFieldMask = 0x3FFF;
  return uint64_t{(address >> 4) & kFieldMask} | uint64_t{(leading_bytes >> 4) & kFieldMask} << 16 |
         uint64_t{(stride_bytes >> 4) & kFieldMask} << 32;
}

// Two values split for the three-product FP16 arithmetic: each into its FP16 (the big part) and
// the FP16 of what that leaves (the small part), packed two to a 32-bit word, the first value in
// the low half (wgmma_f16's register-A layout; the operand writer stores the halves apart).
struct SplitF16x2 {
  uint32_t big;
  uint32_t small;
};

[[nodiscard]] __device__ __forceinline__ SplitF16x2 split_f16x2(float first, float second) {
  const __half2 big = __floats2half2_rn(first, second);
  const float2 big_value = __half22float2(big);
  const __half2 small = __floats2half2_rn(first - big_value.x, second - big_value.y);
  return {*reinterpret_cast<const uint32_t*>(&big), *reinterpret_cast<const uint32_t*>(&small)};
}

#if SVDSERVE_HAS_WGMMA

using WgmmaAccumulators = float[kWgmmaAccumulators];

// This thread's earlier shared-memory writes, visible to wgmmas issued after a barrier: the same
// proxy fence as for bulk copies (wgmma reads shared memory through the async proxy too).
__device__ __forceinline__ void fence_shared_for_wgmma() { fence_shared_for_bulk_copy(); }

// Orders the threads' own accesses to the accumulators before the wgmmas that follow.
__device__ __forceinline__ void fence_wgmma_operands() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

// Closes the group of wgmmas issued since the last commit.
__device__ __forceinline__ void commit_wgmma_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Waits until at most kPending committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wait_wgmma() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accumulator accesses across the asynchronous wgmma (it does not
// know the registers are written later): each value passes through an empty asm.
__device__ __forceinline__ void pin_accumulators(WgmmaAccumulators& d) {
#pragma unroll
  for (uint32_t i = 0; i < kWgmmaAccumulators; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The 64 accumulators of a thread in the wgmma asm: the register list (operands %0..%63) and the
// operands themselves, read and written.
#define SVDSERVE_WGMMA_ACCUMULATOR_LIST                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                   \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "          \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "          \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define SVDSERVE_WGMMA_ACCUMULATOR_OPERANDS(d)                                                \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),          \
      "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
      "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),            \
      "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),            \
      "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),            \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),            \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
      "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),            \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),            \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),            \
      "+f"(d[62]), "+f"(d[63])

// d = a * b^T + (accumulate ? d : 0) for a 64 x 128 tile, k = 8: a is 64 rows x 8 and b is
// 128 columns x 8, both K-major in shared memory. Accumulator layout (per warp w of the
// warpgroup, g = lane / 4, t = lane % 4, j = 0..15): d[4j + 0..1] = row 16w + g, columns
// 8j + 2t and 8j + 2t + 1; d[4j + 2..3] = the same columns of row 16w + g + 8.
__device__ __forceinline__ void wgmma_tf32(WgmmaAccumulators& d, uint64_t a, uint64_t b,
                                           bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      SVDSERVE_WGMMA_ACCUMULATOR_LIST ", "
      "%64, %65, p, 1, 1;\n}\n"
      : SVDSERVE_WGMMA_ACCUMULATOR_OPERANDS(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// FP16 with FP32 accumulators, k = 16: d = a * b^T + (accumulate ? d : 0) for a 64 x 128 tile,
// a 64 rows x 16 and b 128 columns x 16, both K-major in shared memory (no transposes).
__device__ __forceinline__ void wgmma_f16(WgmmaAccumulators& d, uint64_t a, uint64_t b,
                                          bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      SVDSERVE_WGMMA_ACCUMULATOR_LIST ", "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : SVDSERVE_WGMMA_ACCUMULATOR_OPERANDS(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// The same with a in registers: each thread holds 8 FP16 values of the 64 x 16 A in 4 registers
// of two halves (the lower k in the low half), in mma.m16n8k16's A layout per warp w of the
// warpgroup (g = lane / 4, t = lane % 4): a[0] = (row 16w + g, k 2t and 2t + 1), a[1] =
// (16w + g + 8, 2t and 2t + 1), a[2] = (16w + g, 2t + 8 and 2t + 9), a[3] = (16w + g + 8,
// 2t + 8 and 2t + 9). The registers are read while the wgmma runs: they may not be written before
// its group is waited for (ptxas holds them; it warns if it has to serialise).
__device__ __forceinline__ void wgmma_f16(WgmmaAccumulators& d, const uint32_t (&a)[4],
                                          uint64_t b, bool accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      SVDSERVE_WGMMA_ACCUMULATOR_LIST ", "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : SVDSERVE_WGMMA_ACCUMULATOR_OPERANDS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(accumulate)));
}

#undef SVDSERVE_WGMMA_ACCUMULATOR_LIST
#undef SVDSERVE_WGMMA_ACCUMULATOR_OPERANDS

#endif  // SVDSERVE_HAS_WGMMA

}  // namespace svdserve::gpu::detail
