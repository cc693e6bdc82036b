#include "kernels/gpu/common/stream_pool.hpp"

#include <string>

#if SVDSERVE_HAVE_NVTX
#include <nvtx3/nvToolsExtCudaRt.h>
#endif

namespace svdserve::gpu {

StreamContext::StreamContext(int context_index, int device)
    : index(context_index),
      cublas(stream.view()),
      cusolver(stream.view()),
      solver(stream.view(), cusolver.value(), cublas.value()) {
#if SVDSERVE_HAVE_NVTX
  const std::string name =
      "svdserve-gpu" + std::to_string(device) + "-stream-" + std::to_string(context_index);
  nvtxNameCudaStreamA(stream.view().value(), name.c_str());
#endif
}

StreamPool::StreamPool(unsigned size, int device) {
  for (unsigned i = 0; i < size; ++i) {
    contexts_.push_back(std::make_unique<StreamContext>(static_cast<int>(i), device));
    free_.push_back(contexts_.back().get());
  }
}

StreamPool::Lease StreamPool::acquire() {
  std::unique_lock lock(mutex_);
  available_.wait(lock, [&] { return !free_.empty(); });
  StreamContext* context = free_.back();
  free_.pop_back();
  return Lease(*this, *context);
}

std::vector<double> StreamPool::busy_seconds() const {
  std::vector<double> seconds;
  for (const auto& context : contexts_) seconds.push_back(context->busy_ns.load() * 1e-9);
  return seconds;
}

void StreamPool::give_back(StreamContext& context) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(&context);
  }
  available_.notify_one();
}

}  // namespace svdserve::gpu
