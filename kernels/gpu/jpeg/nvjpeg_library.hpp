#pragma once
// nvJPEG, loaded at run time: the GPU host's CUDA installation has libnvjpeg.so.13, the build
// machines may not, and a host without it still serves JPEGs through the CPU decoders.

#include <string>

#include "kernels/gpu/jpeg/nvjpeg_api.hpp"

namespace svdserve::gpu::nvjpeg {

struct Library {
  const Api* api = nullptr;  // null when the library or one of its entry points is missing
  std::string description;   // what was loaded, or why nothing was
};

// Loads the library once per process (dlopen, never unloaded) and resolves Api's entry points.
[[nodiscard]] const Library& library();

// "bad JPEG", "allocator failure", ... for messages and logs.
[[nodiscard]] const char* status_name(Status status) noexcept;

}  // namespace svdserve::gpu::nvjpeg
