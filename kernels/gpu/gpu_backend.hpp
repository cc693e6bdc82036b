#pragma once
// The CUDA backend: factors resident in device memory, cuSOLVER for the SVD, the fused kernels
// for reconstruction, a pool of streams so that batches from different worker threads overlap
// (copies in both directions and compute). Public header: no nvcc needed.

#include <cstddef>
#include <memory>

#include "kernels/backend.hpp"
#include "kernels/gpu/svd/solver.hpp"

namespace svdserve::gpu {

struct GpuBackendOptions {
  int device = 0;
  unsigned streams = 4;
  // Factor memory: budget_bytes, or memory_fraction of the device memory free at start.
  std::size_t budget_bytes = 0;
  double memory_fraction = 0.8;
  SvdMethod svd_method = SvdMethod::automatic;
  bool decode_jpeg = true;  // nvJPEG, where the host has it; else the loaders decode every format
};

// Throws FailedPrecondition when no usable device is present.
[[nodiscard]] std::unique_ptr<Backend> make_gpu_backend(const GpuBackendOptions& options);

}  // namespace svdserve::gpu
