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

// Errors that leave the device's context unusable: every later call on it fails the same way.
bool loses_the_device(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
      return true;
    default:
      return false;
  }
}

// A failed library call after a sticky error on the stream's device reports that error.
void throw_if_device_lost(const std::string& message) {
  const cudaError_t sticky = cudaPeekAtLastError();
  if (loses_the_device(sticky)) {
    throw DeviceFailure(message + " after CUDA error " + cudaGetErrorName(sticky));
  }
}

}  // namespace

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  const std::string message = std::string("CUDA error ") + cudaGetErrorName(error) + " (" +
                              cudaGetErrorString(error) + ") in " + where(call, file, line);
  if (error == cudaErrorMemoryAllocation) throw ResourceExhausted("GPU out of memory: " + message);
  if (loses_the_device(error)) throw DeviceFailure(message);
  throw InternalError(message);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const std::string message = std::string("cuBLAS error ") + cublasGetStatusName(status) + " in " +
                              where(call, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw ResourceExhausted("GPU out of memory: " + message);
  throw_if_device_lost(message);
  throw InternalError(message);
}

void throw_cusolver_error(cusolverStatus_t status, const char* call, const char* file, int line) {
  const std::string message = std::string("cuSOLVER error ") + cusolver_status_name(status) +
                              " in " + where(call, file, line);
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) {
    throw ResourceExhausted("GPU out of memory: " + message);
  }
  throw_if_device_lost(message);
  throw InternalError(message);
}

void throw_driver_error(int result, const std::string& message) {
  if (loses_the_device(static_cast<cudaError_t>(result))) throw DeviceFailure(message);
  throw InternalError(message);
}

void log_if_failed(cudaError_t error, const char* call) noexcept {
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    std::fprintf(stderr, "svdserve: %s failed in a destructor: %s\n", call, cudaGetErrorName(error));
  }
}

}  // namespace svdserve::gpu::detail
