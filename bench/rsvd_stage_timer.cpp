#include "bench/rsvd_stage_timer.hpp"

namespace svdserve::bench {

using gpu::RsvdStage;

std::string_view rsvd_stage_name(RsvdStage stage) noexcept {
  switch (stage) {
    case RsvdStage::sketch_gemm: return "sketch GEMM";
    case RsvdStage::ortho_widen: return "orth: widen";
    case RsvdStage::ortho_gram: return "orth: Gram DGEMM";
    case RsvdStage::ortho_cholesky: return "orth: Cholesky+inv";
    case RsvdStage::ortho_apply: return "orth: X R^-1";
    case RsvdStage::power_gemm: return "power GEMMs";
    case RsvdStage::project_gemm: return "B = Q^T A";
    case RsvdStage::eigen_gram: return "B B^T (widen+DGEMM)";
    case RsvdStage::eigen_solve: return "Jacobi";
    case RsvdStage::factor_gemm: return "U, V";
    case RsvdStage::status: return "status + sync";
  }
  return "?";
}

void RandomizedSvdStageTimer::started(gpu::StreamView stream) {
  stages_.clear();
  if (events_.empty()) events_.emplace_back(true);
  events_[0].record(stream);
  recorded_ = 1;
}

void RandomizedSvdStageTimer::finished(RsvdStage stage, gpu::StreamView stream) {
  if (recorded_ == events_.size()) events_.emplace_back(true);
  events_[recorded_].record(stream);
  ++recorded_;
  stages_.push_back(stage);
}

void RandomizedSvdStageTimer::solved() {
  if (recorded_ == 0) return;
  events_[recorded_ - 1].synchronize();
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    total_ms_[static_cast<std::size_t>(stages_[i])] +=
        gpu::Event::elapsed_ms(events_[i], events_[i + 1]);
  }
  ++solves_;
  recorded_ = 0;
  stages_.clear();
}

void RandomizedSvdStageTimer::reset() noexcept {
  total_ms_.fill(0.0);
  solves_ = 0;
}

double RandomizedSvdStageTimer::ms_per_solve(RsvdStage stage) const noexcept {
  return solves_ == 0 ? 0.0 : total_ms_[static_cast<std::size_t>(stage)] / solves_;
}

double RandomizedSvdStageTimer::total_ms_per_solve() const noexcept {
  double total = 0.0;
  for (const double ms : total_ms_) total += ms;
  return solves_ == 0 ? 0.0 : total / solves_;
}

}  // namespace svdserve::bench
