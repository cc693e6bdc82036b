#pragma once
// The cuBLAS reconstruction: the oracle the fused kernels are tested against and the baseline the
// benchmarks compare them with. One SGEMM per channel (pedantic FP32) into a planar f32 scratch,
// then one kernel that rounds the planes into interleaved pixels by the fused kernels' rule
// (pixel_convert.cuh). The same inputs and outputs as launch_fused_reconstruct; slower, since the
// f32 image makes a round trip through device memory. This header compiles without nvcc.

#include <cublas_v2.h>

#include <span>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/image.hpp"

namespace svdserve::reference {

// tasks: host copies. scratch: device floats, at least shape.values() (reused task by task).
// Leaves the handle's math mode and stream as it found them. Throws InvalidArgument for a task
// with a null pointer, a rank outside 1..rank_kept, or an f32 output that is not float-aligned.
void reconstruct_with_cublas(cublasHandle_t cublas, std::span<const gpu::ReconstructTask> tasks,
                             const ImageShape& shape, OutputPixels pixels, float* scratch,
                             gpu::StreamView stream);

}  // namespace svdserve::reference
