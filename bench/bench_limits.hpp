#pragma once
// The hardware limits the benchmark programs divide by, measured in the same run with CUDA events
// after warm-up (best of several repeats, large transfers so that latency does not count).

namespace svdserve::bench {

// Device-to-host copy into page-locked host memory, GB/s (1e9 bytes/s).
[[nodiscard]] double pinned_d2h_gb_per_s();
// Host-to-device copy from page-locked host memory, GB/s.
[[nodiscard]] double pinned_h2d_gb_per_s();

}  // namespace svdserve::bench
