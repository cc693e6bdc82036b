#pragma once
// The tensor-core arithmetic of the tensor reconstruction kernel (tensor.cu),
// shared with svdserve_reconstruct_bench, which measures its peak: mma.sync m16n8k8 on TF32
// operands with FP32 accumulation, and the split of an FP32 value into two TF32 parts.

#include <cuda_runtime.h>

#include <cstdint>

namespace svdserve::gpu::detail {

// FLOPs of one mma_tf32: 16 x 8 outputs, k = 8, a multiply and an add each.
inline constexpr double kMmaTf32Flops = 2.0 * 16 * 8 * 8;

// x = big + small exactly, both fed to the MMA as TF32 operands. big is x with its 13 low mantissa
// bits cleared (TF32 keeps the top 10): |x - big| < 2^-10 |x|, and small = x - big is exact in
// FP32. The MMA reads small's top 10 mantissa bits only (it truncates; were it to round, the
// error would halve): < 2^-20 |x| lost. With the dropped small*small term, each product is good to
// ~3 * 2^-20 of its size, far under a level for u8. Two instructions (a mask and a subtract), on
// the path from each fragment's shared load to its MMAs. Rounding big to nearest first
// ((bits + 0x1000) & mask, and small's bits + 0x1000: ~2^-22) costs two more, and at k >= 64 the
// kernel ran 9-11 % slower with them (H100). cvt.rna.tf32.f32 is more still on
// sm_90 (it handles NaN and infinity). Finite x only (the factors are checked at decompose).
struct SplitTf32 {
  uint32_t big;
  uint32_t small;
};

[[nodiscard]] __device__ __forceinline__ SplitTf32 split_tf32(float x) {
  constexpr uint32_t kTf32Mask = 0xFFFFE000U;
  const uint32_t big = __float_as_uint(x) & kTf32Mask;
  const float small = x - __uint_as_float(big);
  return {big, __float_as_uint(small)};
}

// d += a * b for one 16 x 8 tile, k = 8, in the PTX fragment layouts (g = lane / 4, t = lane % 4):
// a (16 x 8, row-major): a0 = (g, t), a1 = (g + 8, t), a2 = (g, t + 4), a3 = (g + 8, t + 4);
// b (8 x 8, column-major): b0 = (t, g), b1 = (t + 4, g);
// d (16 x 8): d0 = (g, 2t), d1 = (g, 2t + 1), d2 = (g + 8, 2t), d3 = (g + 8, 2t + 1).
__device__ __forceinline__ void mma_tf32(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

}  // namespace svdserve::gpu::detail
