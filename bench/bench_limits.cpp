#include "bench/bench_limits.hpp"

#include <algorithm>
#include <cstddef>

#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::bench {
namespace {

double copy_gb_per_s(cudaMemcpyKind kind) {
  constexpr std::size_t kBytes = std::size_t{256} << 20;
  gpu::DeviceBuffer device(kBytes);
  gpu::PinnedBuffer host(kBytes);
  gpu::Stream stream;
  const gpu::StreamView view = stream.view();
  gpu::Event start(true), stop(true);
  SVDSERVE_CUDA_CHECK(cudaMemsetAsync(device.data(), 1, kBytes, view.value()));
  void* destination = kind == cudaMemcpyDeviceToHost ? host.data() : device.data();
  const void* source = kind == cudaMemcpyDeviceToHost ? device.data() : host.data();
  double best = 0.0;
  for (int repeat = 0; repeat < 6; ++repeat) {  // the first is warm-up
    start.record(view);
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(destination, source, kBytes, kind, view.value()));
    stop.record(view);
    stop.synchronize();
    const double gb_per_s = kBytes / (gpu::Event::elapsed_ms(start, stop) * 1e-3) / 1e9;
    if (repeat > 0) best = std::max(best, gb_per_s);
  }
  return best;
}

}  // namespace

double pinned_d2h_gb_per_s() { return copy_gb_per_s(cudaMemcpyDeviceToHost); }
double pinned_h2d_gb_per_s() { return copy_gb_per_s(cudaMemcpyHostToDevice); }

}  // namespace svdserve::bench
