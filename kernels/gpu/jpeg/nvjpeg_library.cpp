#include "kernels/gpu/jpeg/nvjpeg_library.hpp"

#include <dlfcn.h>

namespace svdserve::gpu::nvjpeg {
namespace {

// The soname first (the runtime package installs only that), then the development link.
constexpr const char* kLibraryNames[] = {"libnvjpeg.so.13", "libnvjpeg.so"};

template <typename Function>
bool resolve(void* library, const char* name, Function*& function) {
  function = reinterpret_cast<Function*>(dlsym(library, name));
  return function != nullptr;
}

Library load() {
  void* handle = nullptr;
  const char* loaded_name = nullptr;
  for (const char* name : kLibraryNames) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      loaded_name = name;
      break;
    }
  }
  if (handle == nullptr) return {nullptr, "libnvjpeg.so.13 not found"};

  static Api api{};
  const bool complete =
      resolve(handle, "nvjpegCreateEx", api.nvjpegCreateEx) &&
      resolve(handle, "nvjpegDestroy", api.nvjpegDestroy) &&
      resolve(handle, "nvjpegJpegStateCreate", api.nvjpegJpegStateCreate) &&
      resolve(handle, "nvjpegJpegStateDestroy", api.nvjpegJpegStateDestroy) &&
      resolve(handle, "nvjpegJpegStreamCreate", api.nvjpegJpegStreamCreate) &&
      resolve(handle, "nvjpegJpegStreamDestroy", api.nvjpegJpegStreamDestroy) &&
      resolve(handle, "nvjpegJpegStreamParseHeader", api.nvjpegJpegStreamParseHeader) &&
      resolve(handle, "nvjpegDecodeBatchedSupported", api.nvjpegDecodeBatchedSupported) &&
      resolve(handle, "nvjpegDecodeBatchedInitialize", api.nvjpegDecodeBatchedInitialize) &&
      resolve(handle, "nvjpegDecodeBatched", api.nvjpegDecodeBatched) &&
      resolve(handle, "nvjpegDecode", api.nvjpegDecode);
  if (!complete) {
    dlclose(handle);
    return {nullptr, std::string(loaded_name) + " lacks an entry point svdserve needs"};
  }
  return {&api, loaded_name};
}

}  // namespace

const Library& library() {
  static const Library loaded = load();
  return loaded;
}

const char* status_name(Status status) noexcept {
  switch (status) {
    case kSuccess: return "success";
    case 1: return "not initialized";
    case kInvalidParameter: return "invalid parameter";
    case kBadJpeg: return "bad JPEG";
    case kJpegNotSupported: return "JPEG not supported";
    case kAllocatorFailure: return "allocator failure";
    case 6: return "execution failed";
    case kArchMismatch: return "architecture mismatch";
    case 8: return "internal error";
    case 9: return "implementation not supported";
    case kIncompleteBitstream: return "incomplete bitstream";
    default: return "unknown status";
  }
}

}  // namespace svdserve::gpu::nvjpeg
