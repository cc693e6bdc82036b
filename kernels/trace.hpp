#pragma once
// NVTX ranges in svdserve's own domain, so Nsight Systems groups them under "svdserve".
// Always compiled in where the NVTX3 headers exist; a range costs a few ns when no tool listens.

#if SVDSERVE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace svdserve::trace {

#if SVDSERVE_HAVE_NVTX
struct DomainTag {
  static constexpr const char* name = "svdserve";
};

inline nvtxDomainHandle_t domain() noexcept {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA(DomainTag::name);
  return handle;
}

// RAII range: pushed in the constructor, popped in the destructor, on the calling thread.
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) noexcept {
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name;
    nvtxDomainRangePushEx(domain(), &attributes);
  }
  ~ScopedRange() { nvtxDomainRangePop(domain()); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
};
#else
class ScopedRange {
 public:
  explicit ScopedRange(const char*) noexcept {}
};
#endif

// Names the calling OS thread in the profiler's timeline (NVTX) and in the OS (prctl).
void name_current_thread(const char* name) noexcept;

}  // namespace svdserve::trace
