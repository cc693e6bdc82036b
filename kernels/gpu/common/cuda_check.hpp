#pragma once
// One check macro per CUDA library. Each records the call, file, line and the error's name and
// throws a typed svdserve::Error: out-of-memory becomes ResourceExhausted (the request can be
// retried or the budget lowered), everything else InternalError. Plain C++: no nvcc needed.
// A failed CUDA runtime call also stays recorded as the thread's last error; like RMM_CUDA_TRY,
// the runtime macros clear it (cudaGetLastError) before throwing, so that a failure that is not
// sticky (a refused allocation, a bad argument) is reported once, by its own exception, and not
// again by the next launch check of unrelated work on this thread. Sticky errors stay.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <string>

#include "kernels/errors.hpp"

namespace svdserve::gpu::detail {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);
[[noreturn]] void throw_cusolver_error(cusolverStatus_t status, const char* call, const char* file,
                                       int line);
// A failed CUDA driver call (CUresult; the driver and the runtime number the errors that lose a
// device alike): DeviceFailure for those, else InternalError.
[[noreturn]] void throw_driver_error(int result, const std::string& message);

}  // namespace svdserve::gpu::detail

#define SVDSERVE_CUDA_CHECK(call)                                                      \
  do {                                                                                 \
    const cudaError_t svdserve_cuda_status = (call);                                   \
    if (svdserve_cuda_status != cudaSuccess) {                                         \
      static_cast<void>(cudaGetLastError());                                           \
      ::svdserve::gpu::detail::throw_cuda_error(svdserve_cuda_status, #call, __FILE__, \
                                                __LINE__);                             \
    }                                                                                  \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define SVDSERVE_CUDA_CHECK_LAUNCH() SVDSERVE_CUDA_CHECK(cudaGetLastError())

#define SVDSERVE_CUBLAS_CHECK(call)                                                      \
  do {                                                                                   \
    const cublasStatus_t svdserve_cublas_status = (call);                                \
    if (svdserve_cublas_status != CUBLAS_STATUS_SUCCESS) {                               \
      ::svdserve::gpu::detail::throw_cublas_error(svdserve_cublas_status, #call, __FILE__, \
                                                  __LINE__);                             \
    }                                                                                    \
  } while (0)

#define SVDSERVE_CUSOLVER_CHECK(call)                                                        \
  do {                                                                                       \
    const cusolverStatus_t svdserve_cusolver_status = (call);                                \
    if (svdserve_cusolver_status != CUSOLVER_STATUS_SUCCESS) {                               \
      ::svdserve::gpu::detail::throw_cusolver_error(svdserve_cusolver_status, #call, __FILE__, \
                                                    __LINE__);                               \
    }                                                                                        \
  } while (0)

// In destructors: log, clear the last error as above and carry on, never throw.
#define SVDSERVE_CUDA_CHECK_NOTHROW(call) ::svdserve::gpu::detail::log_if_failed((call), #call)

namespace svdserve::gpu::detail {
void log_if_failed(cudaError_t error, const char* call) noexcept;
}
