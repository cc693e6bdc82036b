#pragma once
// Prometheus /metrics on a side port: prometheus-cpp counters and histograms updated as work
// happens, and gauges (queue depths, store, device memory, stream busy time) read at scrape time,
// served by MetricsHttpEndpoint.

#include <grpcpp/support/status.h>

#include <functional>
#include <memory>
#include <string>

#include "kernels/backend.hpp"
#include "server/runtime/host_buffer_pool.hpp"
#include "server/runtime/job.hpp"
#include "server/process/metrics_http.hpp"
#include "server/grpc/stream_budget.hpp"

namespace prometheus {
class Registry;
class Counter;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace svdserve {

// What the gauges show, sampled on each scrape.
struct LiveValues {
  std::size_t decode_queue_depth = 0;
  std::size_t compute_queue_depth = 0;
  int64_t jobs_in_flight = 0;
  std::size_t images_resident = 0;
  std::size_t bytes_resident = 0;
  std::size_t budget_bytes = 0;
  uint64_t evictions = 0;
  HostBufferPoolStats host_buffers;
  StreamBudgetSample streams;
  BackendMetrics backend;
};

class Metrics {
 public:
  // Serves on 0.0.0.0:port. Throws Unavailable when the port cannot be bound.
  Metrics(int port, std::function<LiveValues()> sample);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  [[nodiscard]] int port() const noexcept { return endpoint_->port(); }
  // The text exposition format of every metric.
  [[nodiscard]] std::string render() const;

  void record_call(const std::string& method, grpc::StatusCode code);
  void record_job(const StageTimes& times, double total_us);
  void record_batch(std::size_t size);

 private:
  class LiveCollectable;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_ = nullptr;
  prometheus::Family<prometheus::Histogram>* stage_seconds_ = nullptr;
  prometheus::Histogram* batch_size_ = nullptr;
  std::shared_ptr<LiveCollectable> live_;
  std::unique_ptr<MetricsHttpEndpoint> endpoint_;  // last: stops before what it reads
};

}  // namespace svdserve
