#pragma once
// Where a randomized SVD's time goes, for benchmarks: with RandomizedSvdOptions::stage_timer set,
// solve() records a CUDA event on its stream after every stage and, once its final stream sync
// has passed, adds the time between consecutive events to that stage. Production leaves the
// pointer null and records nothing.

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"

namespace svdserve::gpu {

enum class RsvdStage {
  sketch_gemm,       // Y = A Omega (and Omega itself)
  ortho_widen,       // CholeskyQR: X to float64
  ortho_gram,        // CholeskyQR: X^T X (DGEMM)
  ortho_cholesky,    // CholeskyQR: R and R^-1 (one-block kernel)
  ortho_apply,       // CholeskyQR: X R^-1 (SGEMM)
  power_gemm,        // A^T Q and A Z
  project_gemm,      // B = Q^T A
  eigen_gram,        // B to float64 and B B^T (DGEMM)
  eigen_solve,       // Jacobi on B B^T (one-block kernel)
  factor_gemm,       // U = Q W, V = B^T W, unit columns
  status,            // info copy and the final stream sync
};
inline constexpr std::size_t kRsvdStageCount = static_cast<std::size_t>(RsvdStage::status) + 1;

[[nodiscard]] std::string_view rsvd_stage_name(RsvdStage stage) noexcept;

class RandomizedSvdStageTimer {
 public:
  RandomizedSvdStageTimer() = default;
  RandomizedSvdStageTimer(const RandomizedSvdStageTimer&) = delete;
  RandomizedSvdStageTimer& operator=(const RandomizedSvdStageTimer&) = delete;

  // Called by solve(): start records the first event, finished(stage) the end of that stage
  // (which began at the previous event), collect after the stream has passed the last event.
  void start(StreamView stream);
  void finished(RsvdStage stage, StreamView stream);
  void collect();

  void reset() noexcept;
  [[nodiscard]] int solves() const noexcept { return solves_; }
  // Milliseconds per solve spent in each stage, averaged over the collected solves.
  [[nodiscard]] double ms_per_solve(RsvdStage stage) const noexcept;
  [[nodiscard]] double total_ms_per_solve() const noexcept;

 private:
  std::vector<Event> events_;       // a pool, grown on first use and reused by later solves
  std::vector<RsvdStage> stages_;   // stages_[i] ends at events_[i + 1]
  std::size_t recorded_ = 0;        // events recorded in the current solve
  std::array<double, kRsvdStageCount> total_ms_{};
  int solves_ = 0;
};

// Calls the timer when there is one; a no-op otherwise (the production path).
class RsvdStageMarks {
 public:
  RsvdStageMarks(RandomizedSvdStageTimer* timer, StreamView stream) : timer_(timer), stream_(stream) {
    if (timer_ != nullptr) timer_->start(stream_);
  }
  void finished(RsvdStage stage) const {
    if (timer_ != nullptr) timer_->finished(stage, stream_);
  }
  void collect() const {
    if (timer_ != nullptr) timer_->collect();
  }

 private:
  RandomizedSvdStageTimer* timer_;
  StreamView stream_;
};

}  // namespace svdserve::gpu
