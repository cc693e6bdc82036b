#include "kernels/gpu/common/cuda_check.hpp"

#include <cstdio>

namespace svdserve::gpu::detail {
namespace {

std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " at " + file + ":" + std::to_string(line);
}

const char* cusolver_status_name(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: return "CUSOLVER_STATUS_(other)";
  }
}

}  // namespace

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  const std::string message = std::string("CUDA error ") + cudaGetErrorName(error) + " (" +
                              cudaGetErrorString(error) + ") in " + where(call, file, line);
  if (error == cudaErrorMemoryAllocation) throw ResourceExhausted("GPU out of memory: " + message);
  throw InternalError(message);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const std::string message = std::string("cuBLAS error ") + cublasGetStatusName(status) + " in " +
                              where(call, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw ResourceExhausted("GPU out of memory: " + message);
  throw InternalError(message);
}

void throw_cusolver_error(cusolverStatus_t status, const char* call, const char* file, int line) {
  const std::string message = std::string("cuSOLVER error ") + cusolver_status_name(status) +
                              " in " + where(call, file, line);
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) {
    throw ResourceExhausted("GPU out of memory: " + message);
  }
  throw InternalError(message);
}

void log_if_failed(cudaError_t error, const char* call) noexcept {
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::fprintf(stderr, "svdserve: %s failed in a destructor: %s\n", call, cudaGetErrorName(error));
  }
}

}  // namespace svdserve::gpu::detail
