#pragma once
// cuBLAS's own FP16 GEMM at the wgmma variant's shapes, for the kernel benchmark. Not a floor: how
// close the vendor's GEMM on the same arithmetic comes to the FP16 wgmma peak there, so that a
// kernel row's distance to its MMA floor can be read against what the library reaches.
//
// The variant's three FP16 products per term (US_big V_big + US_big V_small + US_small V_big, FP32
// accumulators) are one GEMM three times as deep: h x w x 3k per image and channel, with
// A = [US_big | US_big | US_small] and B = [V_big; V_small; V_big]. cuBLAS runs that tensor-core
// work without the variant's operand split, ring, rounding or u8 store; its C is FP16, twice the
// u8 output's bytes.

#include <cstdint>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::bench {

class F16GemmBatch {
 public:
  // `count` GEMMs of m x n x depth (depth up to max_depth), column-major, on random FP16 operands
  // in [-1, 1) (filled here, on `stream`).
  F16GemmBatch(uint32_t m, uint32_t n, uint32_t max_depth, uint32_t count,
               gpu::StreamView stream);

  // C = A B for every GEMM of the batch at `depth` (one strided-batched cuBLAS call on the
  // stream), FP32 accumulation.
  void enqueue(uint32_t depth) const;

 private:
  uint32_t m_;
  uint32_t n_;
  uint32_t max_depth_;
  uint32_t count_;
  gpu::DeviceBuffer a_;
  gpu::DeviceBuffer b_;
  gpu::DeviceBuffer c_;
  gpu::CublasHandle cublas_;
};

// One square FP16 GEMM n x n x n (FP32 accumulation), the library's best case: TFLOP/s of the
// fastest of a few runs after a warm-up.
[[nodiscard]] double f16_gemm_square_tflops(uint32_t n, gpu::StreamView stream);

}  // namespace svdserve::bench
