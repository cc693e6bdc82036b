#pragma once
// Prometheus text exposition for GET /metrics: the metrics sink's counters and histograms, and
// gauges sampled at scrape time (queue depths, store, host buffer pool, budgets, device).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "server/grpc/stream_budget.hpp"
#include "server/grpc/unsent_bytes_budget.hpp"
#include "server/process/metrics_sink.hpp"
#include "server/repository/factor_cache.hpp"
#include "server/runtime/device_snapshot.hpp"
#include "server/runtime/host_buffer_pool.hpp"

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
  UnsentBytesSample unsent;
  BackendMetrics backend;
  RepositoryCounters repository;
  std::vector<DeviceSnapshot> devices;
  std::size_t queue_capacity = 0;  // the bound of each pipeline queue
};

[[nodiscard]] std::string prometheus_text(const MetricsSink::Totals& totals,
                                          const LiveValues& live);

}  // namespace svdserve
