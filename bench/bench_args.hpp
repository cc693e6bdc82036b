#pragma once
// The command line every benchmark program shares: [--quick] [--json FILE], and the check that a
// CUDA device is there (the benchmarks measure the GPU; without one they say so and stop).

#include <cstdio>
#include <optional>
#include <string>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::bench {

struct BenchArgs {
  bool quick = false;      // fewer sizes and shorter runs
  std::string json_path;   // empty: no JSON
};

// Empty (after a message on stderr) when no CUDA device is usable.
[[nodiscard]] inline std::optional<BenchArgs> parse_bench_args(int argc, char** argv) {
  BenchArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") args.quick = true;
    else if (arg == "--json" && i + 1 < argc) args.json_path = argv[++i];
  }
  if (!gpu::cuda_device_available()) {
    std::fprintf(stderr, "no CUDA device\n");
    return std::nullopt;
  }
  return args;
}

}  // namespace svdserve::bench
