#include "server/process/metrics_sink.hpp"

#include <algorithm>
#include <chrono>

#include "svdserve/status_code_names.hpp"

namespace svdserve {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;
constexpr const char* kStages[] = {"queue", "decode", "compute", "encode", "total"};

// 50 us .. ~13 s, doubling: covers a cached reconstruct and a 4096^2 CPU decomposition.
std::vector<double> latency_bounds_seconds() {
  std::vector<double> bounds;
  for (double b = 50e-6; b < 15.0; b *= 2) bounds.push_back(b);
  return bounds;
}

std::vector<double> batch_size_bounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 256}; }

int64_t seconds_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count();
}

// GetStats shows what happened: the series kept at zero for /metrics are left out.
void fill_counts(const MetricsSink::CodeCounts& counts,
                 google::protobuf::RepeatedPtrField<v1::MethodStats>& out) {
  for (const auto& [method, codes] : counts) {
    uint64_t total = 0;
    for (const auto& entry : codes) total += entry.second;
    if (total == 0) continue;
    auto* m = out.Add();
    m->set_method(method);
    m->set_requests(total);
    for (const auto& [code, count] : codes) {
      if (count == 0) continue;
      auto* c = m->add_codes();
      c->set_code(status_code_text(code));
      c->set_count(count);
    }
  }
}

// Nearest rank.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const auto index = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : upper_bounds(std::move(bounds)), counts(upper_bounds.size() + 1, 0) {}

void Histogram::observe(double value) {
  const auto bucket = std::lower_bound(upper_bounds.begin(), upper_bounds.end(), value);
  ++counts[static_cast<std::size_t>(bucket - upper_bounds.begin())];
  sum += value;
  ++count;
}

void MetricsSink::RecentSamples::add(double value) {
  if (values.size() < kWindow) {
    values.push_back(value);
  } else {
    values[next] = value;
  }
  next = (next + 1) % kWindow;
}

MetricsSink::MetricsSink(const MetricLabels& labels)
    : started_(Clock::now()), batch_sizes_(batch_size_bounds()) {
  second_of_bucket_.fill(-1);
  for (const auto& method : labels.methods) {
    for (grpc::StatusCode code : labels.codes) calls_[method][static_cast<int>(code)] = 0;
  }
  for (const auto& method : labels.item_methods) {
    for (grpc::StatusCode code : labels.codes) items_[method][static_cast<int>(code)] = 0;
  }
  for (const auto& method : labels.job_methods) {
    for (const char* stage : kStages) {
      stage_seconds_.emplace(std::pair{method, std::string(stage)},
                             Histogram(latency_bounds_seconds()));
    }
  }
}

namespace {

void count(MetricsSink::CodeCounts& counts, std::string_view method, grpc::StatusCode code) {
  auto it = counts.find(method);
  if (it == counts.end()) it = counts.emplace(std::string(method), std::map<int, uint64_t>{}).first;
  ++it->second[static_cast<int>(code)];
}

}  // namespace

void MetricsSink::record_call(std::string_view method, grpc::StatusCode code) {
  std::lock_guard lock(mutex_);
  count(calls_, method, code);
}

void MetricsSink::record_item(std::string_view method, grpc::StatusCode code) {
  std::lock_guard lock(mutex_);
  count(items_, method, code);
}

void MetricsSink::add_stage_locked(std::string_view method, const char* stage, double us) {
  recent_us_[stage].add(us);
  auto it = stage_seconds_.find(std::pair{std::string(method), std::string(stage)});
  if (it == stage_seconds_.end()) {
    it = stage_seconds_
             .emplace(std::pair{std::string(method), std::string(stage)},
                      Histogram(latency_bounds_seconds()))
             .first;
  }
  it->second.observe(us / kMicrosecondsPerSecond);
}

void MetricsSink::record_job(std::string_view method, const StageTimes& times, double total_us) {
  const int64_t second = seconds_since(started_);
  std::lock_guard lock(mutex_);
  add_stage_locked(method, "queue", times.queue_us);
  if (times.decode_us > 0) add_stage_locked(method, "decode", times.decode_us);  // jobs that decoded
  add_stage_locked(method, "compute", times.compute_us);
  if (times.encode_us > 0) add_stage_locked(method, "encode", times.encode_us);  // PNG, JPEG answers
  add_stage_locked(method, "total", total_us);
  const std::size_t bucket = static_cast<std::size_t>(second) % kRateSeconds;
  if (second_of_bucket_[bucket] != second) {
    second_of_bucket_[bucket] = second;
    images_by_second_[bucket] = 0;
  }
  ++images_by_second_[bucket];
}

void MetricsSink::record_batch(std::size_t size) {
  std::lock_guard lock(mutex_);
  batch_sizes_.observe(static_cast<double>(size));
}

void MetricsSink::fill_stats(v1::GetStatsResponse& out) const {
  const int64_t now_second = seconds_since(started_);
  const double uptime_s = std::chrono::duration<double>(Clock::now() - started_).count();
  std::lock_guard lock(mutex_);
  fill_counts(calls_, *out.mutable_methods());
  fill_counts(items_, *out.mutable_items());
  for (const char* stage : kStages) {
    auto it = recent_us_.find(stage);
    if (it == recent_us_.end()) continue;
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
  out.set_batches(batch_sizes_.count);
  out.set_mean_batch_size(batch_sizes_.count > 0 ? batch_sizes_.sum / batch_sizes_.count : 0.0);
  out.set_uptime_s(uptime_s);
}

MetricsSink::Totals MetricsSink::totals() const {
  std::lock_guard lock(mutex_);
  return {calls_, items_, stage_seconds_, batch_sizes_};
}

}  // namespace svdserve
