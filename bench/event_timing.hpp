#pragma once
// Timing GPU work in the benchmark programs: CUDA events on the work's stream, after one warm-up
// run, so that module loading, library heuristics and cold caches do not count.

#include <algorithm>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::bench {

// The times of `repeats` runs of enqueue() (ms, sorted), after one more as a warm-up.
template <typename Enqueue>
std::vector<double> time_ms(gpu::StreamView stream, int repeats, Enqueue&& enqueue) {
  const gpu::Event start(true);
  const gpu::Event stop(true);
  enqueue();  // warm-up: module load, cuBLAS heuristics, caches
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    start.record(stream);
    enqueue();
    stop.record(stream);
    stop.synchronize();
    times.push_back(gpu::Event::elapsed_ms(start, stop));
  }
  std::sort(times.begin(), times.end());
  return times;
}

inline double median(const std::vector<double>& sorted) { return sorted[sorted.size() / 2]; }

}  // namespace svdserve::bench
