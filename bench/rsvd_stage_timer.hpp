#pragma once
// Where a randomized SVD's time goes: set as RandomizedSvdOptions::stage_observer, it records a
// CUDA event on the solve's stream after every stage and, once the solve's final stream sync has
// passed, adds the time between consecutive events to that stage.

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/randomized_svd.hpp"

namespace svdserve::bench {

[[nodiscard]] std::string_view rsvd_stage_name(gpu::RsvdStage stage) noexcept;

class RandomizedSvdStageTimer final : public gpu::RsvdStageObserver {
 public:
  RandomizedSvdStageTimer() = default;
  RandomizedSvdStageTimer(const RandomizedSvdStageTimer&) = delete;
  RandomizedSvdStageTimer& operator=(const RandomizedSvdStageTimer&) = delete;

  void started(gpu::StreamView stream) override;
  void finished(gpu::RsvdStage stage, gpu::StreamView stream) override;
  void solved() override;

  void reset() noexcept;
  [[nodiscard]] int solves() const noexcept { return solves_; }
  // Milliseconds per solve spent in each stage, averaged over the timed solves.
  [[nodiscard]] double ms_per_solve(gpu::RsvdStage stage) const noexcept;
  [[nodiscard]] double total_ms_per_solve() const noexcept;

 private:
  std::vector<gpu::Event> events_;      // a pool, grown on first use and reused by later solves
  std::vector<gpu::RsvdStage> stages_;  // stages_[i] ends at events_[i + 1]
  std::size_t recorded_ = 0;            // events recorded in the current solve
  std::array<double, gpu::kRsvdStageCount> total_ms_{};
  int solves_ = 0;
};

}  // namespace svdserve::bench
