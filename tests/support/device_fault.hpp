#pragma once
// A real device failure for tests: a kernel that traps on `device`, which leaves that device's
// context unusable (cudaErrorLaunchFailure, sticky) for the rest of the process.

#include <cuda_runtime_api.h>

namespace svdserve::testing {

// The error the trapped kernel left (cudaErrorLaunchFailure). The current device is restored.
[[nodiscard]] cudaError_t trap_on_device(int device);

}  // namespace svdserve::testing
