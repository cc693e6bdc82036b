#include "kernels/trace.hpp"

#include <pthread.h>

#include <string>

namespace svdserve::trace {

void name_current_thread(const char* name) noexcept {
  // Linux limits thread names to 15 characters.
  const std::string short_name = std::string(name).substr(0, 15);
  pthread_setname_np(pthread_self(), short_name.c_str());
#if SVDSERVE_HAVE_NVTX
  nvtxNameOsThreadA(static_cast<uint32_t>(gettid()), name);
#endif
}

}  // namespace svdserve::trace
