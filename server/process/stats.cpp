#include "server/process/stats.hpp"

#include <algorithm>

#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

int64_t seconds_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count();
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

void Stats::Samples::add(double value) {
  if (values.size() < kWindow) {
    values.push_back(value);
  } else {
    values[next] = value;
  }
  next = (next + 1) % kWindow;
}

Stats::Stats() : started_(Clock::now()) { second_of_bucket_.fill(-1); }

void Stats::record_call(const std::string& method, grpc::StatusCode code) {
  if (metrics_ != nullptr) metrics_->record_call(method, code);
  std::lock_guard lock(mutex_);
  ++calls_[method][code];
}

void Stats::record_job(const StageTimes& times, double total_us) {
  if (metrics_ != nullptr) metrics_->record_job(times, total_us);
  const int64_t second = seconds_since(started_);
  std::lock_guard lock(mutex_);
  stages_["queue"].add(times.queue_us);
  if (times.decode_us > 0) stages_["decode"].add(times.decode_us);
  stages_["compute"].add(times.compute_us);
  if (times.encode_us > 0) stages_["encode"].add(times.encode_us);
  stages_["total"].add(total_us);
  const std::size_t bucket = static_cast<std::size_t>(second) % kRateSeconds;
  if (second_of_bucket_[bucket] != second) {
    second_of_bucket_[bucket] = second;
    images_by_second_[bucket] = 0;
  }
  ++images_by_second_[bucket];
}

void Stats::record_batch(std::size_t size) {
  if (metrics_ != nullptr) metrics_->record_batch(size);
  std::lock_guard lock(mutex_);
  ++batches_;
  batched_jobs_ += size;
}

void Stats::fill(v1::GetStatsResponse& out) const {
  const int64_t now_second = seconds_since(started_);
  const double uptime_s =
      std::chrono::duration<double>(Clock::now() - started_).count();
  std::lock_guard lock(mutex_);
  for (const auto& [method, codes] : calls_) {
    auto* m = out.add_methods();
    m->set_method(method);
    uint64_t total = 0;
    for (const auto& [code, count] : codes) {
      auto* c = m->add_codes();
      c->set_code(code_name(code));
      c->set_count(count);
      total += count;
    }
    m->set_requests(total);
  }
  for (const char* stage : {"queue", "decode", "compute", "encode", "total"}) {
    auto it = stages_.find(stage);
    if (it == stages_.end()) continue;
    std::vector<double> sorted = it->second.values;
    std::sort(sorted.begin(), sorted.end());
    auto* l = out.add_latencies();
    l->set_stage(stage);
    l->set_p50_us(percentile(sorted, 0.50));
    l->set_p90_us(percentile(sorted, 0.90));
    l->set_p99_us(percentile(sorted, 0.99));
    l->set_max_us(sorted.empty() ? 0.0 : sorted.back());
    l->set_samples(sorted.size());
  }
  // Completed images in the last full seconds of the window (the current second is partial).
  uint64_t images = 0;
  int64_t seconds_counted = 0;
  for (int64_t s = now_second - static_cast<int64_t>(kRateSeconds) + 1; s < now_second; ++s) {
    if (s < 0) continue;
    ++seconds_counted;
    const std::size_t bucket = static_cast<std::size_t>(s) % kRateSeconds;
    if (second_of_bucket_[bucket] == s) images += images_by_second_[bucket];
  }
  out.set_images_per_second(seconds_counted > 0 ? static_cast<double>(images) / seconds_counted
                                                 : 0.0);
  out.set_batches(batches_);
  out.set_mean_batch_size(batches_ > 0 ? static_cast<double>(batched_jobs_) / batches_ : 0.0);
  out.set_uptime_s(uptime_s);
}

}  // namespace svdserve
