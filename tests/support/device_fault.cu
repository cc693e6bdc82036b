#include "tests/support/device_fault.hpp"

namespace svdserve::testing {
namespace {

__global__ void trap_kernel() { __trap(); }

}  // namespace

cudaError_t trap_on_device(int device) {
  int current = 0;
  (void)cudaGetDevice(&current);
  (void)cudaSetDevice(device);
  trap_kernel<<<1, 1>>>();
  const cudaError_t error = cudaDeviceSynchronize();
  (void)cudaSetDevice(current);
  return error;
}

}  // namespace svdserve::testing
