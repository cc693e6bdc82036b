#include "server/process/prometheus_text.hpp"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "svdserve/status_code_names.hpp"

namespace svdserve {
namespace {

prometheus::MetricFamily gauge(std::string name, std::string help, double value) {
  prometheus::MetricFamily family{std::move(name), std::move(help), prometheus::MetricType::Gauge, {}};
  prometheus::ClientMetric metric;
  metric.gauge.value = value;
  family.metric.push_back(metric);
  return family;
}

// A family of one gauge or counter per value of `label`, e.g. svdserve_queue_depth{queue="decode"}.
using LabelledValues = std::initializer_list<std::pair<const char*, double>>;
prometheus::MetricFamily labelled(std::string name, std::string help, prometheus::MetricType type,
                                  const std::string& label, LabelledValues values) {
  prometheus::MetricFamily family{std::move(name), std::move(help), type, {}};
  for (const auto& [label_value, value] : values) {
    prometheus::ClientMetric metric;
    metric.label.push_back({label, label_value});
    (type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value) = value;
    family.metric.push_back(metric);
  }
  return family;
}

prometheus::ClientMetric::Histogram histogram_metric(const Histogram& histogram) {
  prometheus::ClientMetric::Histogram out;
  out.sample_count = histogram.count;
  out.sample_sum = histogram.sum;
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < histogram.counts.size(); ++i) {
    cumulative += histogram.counts[i];
    const double upper_bound = i < histogram.upper_bounds.size()
                                   ? histogram.upper_bounds[i]
                                   : std::numeric_limits<double>::infinity();
    out.bucket.push_back({cumulative, upper_bound});
  }
  return out;
}

// A counter family by method and gRPC status code.
prometheus::MetricFamily by_method_and_code(std::string name, std::string help,
                                            const MetricsSink::CodeCounts& counts) {
  prometheus::MetricFamily family{std::move(name), std::move(help),
                                  prometheus::MetricType::Counter, {}};
  for (const auto& [method, codes] : counts) {
    for (const auto& [code, count] : codes) {
      prometheus::ClientMetric metric;
      metric.label = {{"code", status_code_text(code)}, {"method", method}};  // sorted by name
      metric.counter.value = static_cast<double>(count);
      family.metric.push_back(std::move(metric));
    }
  }
  return family;
}

// The recorded events: requests and items by method and code, stage durations, batch sizes.
// A family of one gauge or counter per device, labelled with its CUDA ordinal (0 on the CPU).
prometheus::MetricFamily per_device(std::string name, std::string help, prometheus::MetricType type,
                                    const std::vector<DeviceSnapshot>& devices,
                                    double (*value)(const DeviceSnapshot&)) {
  prometheus::MetricFamily family{std::move(name), std::move(help), type, {}};
  for (const DeviceSnapshot& device : devices) {
    prometheus::ClientMetric metric;
    metric.label.push_back({"device", std::to_string(device.info.ordinal)});
    (type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value) =
        value(device);
    family.metric.push_back(metric);
  }
  return family;
}

void add_devices(const std::vector<DeviceSnapshot>& devices,
                 std::vector<prometheus::MetricFamily>& out) {
  using prometheus::MetricType;
  out.push_back(per_device("svdserve_device_in_service",
                           "1 while the device takes work, 0 once it failed", MetricType::Gauge,
                           devices, [](const DeviceSnapshot& d) { return d.info.in_service ? 1.0 : 0.0; }));
  out.push_back(per_device("svdserve_device_images_resident", "Images whose factors the device holds",
                           MetricType::Gauge, devices,
                           [](const DeviceSnapshot& d) { return static_cast<double>(d.usage.images); }));
  out.push_back(per_device("svdserve_device_bytes_resident",
                           "Bytes the device's budget counts (factors and entries)",
                           MetricType::Gauge, devices,
                           [](const DeviceSnapshot& d) { return static_cast<double>(d.usage.bytes); }));
  out.push_back(per_device("svdserve_device_memory_budget_bytes", "The device's factor budget",
                           MetricType::Gauge, devices, [](const DeviceSnapshot& d) {
                             return static_cast<double>(d.usage.budget_bytes);
                           }));
  out.push_back(per_device("svdserve_device_calls_running",
                           "Decompose and reconstruct batches running on the device",
                           MetricType::Gauge, devices, [](const DeviceSnapshot& d) {
                             return static_cast<double>(d.metrics.calls_running);
                           }));
  out.push_back(per_device("svdserve_device_busy_seconds_total",
                           "Time the device's streams held batches, summed over its streams",
                           MetricType::Counter, devices,
                           [](const DeviceSnapshot& d) { return d.busy_seconds(); }));
}

void add_recorded(const MetricsSink::Totals& totals, std::vector<prometheus::MetricFamily>& out) {
  out.push_back(by_method_and_code("svdserve_requests_total",
                                   "RPCs answered, by method and gRPC status code", totals.calls));
  out.push_back(by_method_and_code(
      "svdserve_items_total",
      "Items of ReconstructStream and ReconstructBatch calls answered, by method and their own "
      "status code (an item can fail inside a call that ends OK)",
      totals.items));

  prometheus::MetricFamily stages{"svdserve_stage_duration_seconds",
                                  "Time per image in each pipeline stage, by the RPC it answers",
                                  prometheus::MetricType::Histogram, {}};
  for (const auto& [key, histogram] : totals.stage_seconds) {
    prometheus::ClientMetric metric;
    metric.label = {{"method", key.first}, {"stage", key.second}};
    metric.histogram = histogram_metric(histogram);
    stages.metric.push_back(std::move(metric));
  }
  out.push_back(std::move(stages));

  prometheus::MetricFamily batches{"svdserve_batch_size", "Images per batch run on the backend",
                                   prometheus::MetricType::Histogram, {}};
  prometheus::ClientMetric batch_metric;
  batch_metric.histogram = histogram_metric(totals.batch_sizes);
  batches.metric.push_back(std::move(batch_metric));
  out.push_back(std::move(batches));
}

// The gauges (and counters kept elsewhere) sampled now.
void add_live(const LiveValues& v, std::vector<prometheus::MetricFamily>& out) {
  out.push_back(labelled("svdserve_queue_depth", "Jobs waiting in a pipeline queue",
                         prometheus::MetricType::Gauge, "queue",
                         {{"decode", static_cast<double>(v.decode_queue_depth)},
                          {"compute", static_cast<double>(v.compute_queue_depth)}}));
  // The bound beside the depth, so that an alert on a full queue needs no copy of the config.
  out.push_back(labelled("svdserve_queue_capacity", "Jobs a pipeline queue holds at most",
                         prometheus::MetricType::Gauge, "queue",
                         {{"decode", static_cast<double>(v.queue_capacity)},
                          {"compute", static_cast<double>(v.queue_capacity)}}));
  out.push_back(gauge("svdserve_jobs_in_flight", "Jobs admitted and not yet answered",
                      static_cast<double>(v.jobs_in_flight)));
  out.push_back(gauge("svdserve_images_resident", "Images whose factors are resident",
                      static_cast<double>(v.images_resident)));
  out.push_back(gauge("svdserve_bytes_resident", "Bytes of resident factors",
                      static_cast<double>(v.bytes_resident)));
  out.push_back(gauge("svdserve_memory_budget_bytes", "Factor store budget",
                      static_cast<double>(v.budget_bytes)));
  prometheus::MetricFamily evictions{"svdserve_evictions_total",
                                     "Images evicted to fit the budget",
                                     prometheus::MetricType::Counter, {}};
  prometheus::ClientMetric eviction_metric;
  eviction_metric.counter.value = static_cast<double>(v.evictions);
  evictions.metric.push_back(eviction_metric);
  out.push_back(evictions);
  const RepositoryCounters& r = v.repository;
  out.push_back(labelled("svdserve_factor_cache_lookups_total",
                         "Factor lookups by where they were found: memory (hit) or the repository "
                         "(miss)",
                         prometheus::MetricType::Counter, "result",
                         {{"hit", static_cast<double>(r.hits)},
                          {"miss", static_cast<double>(r.misses)}}));
  out.push_back(labelled("svdserve_repository_loads_total",
                         "Images loaded from the factor repository, by outcome",
                         prometheus::MetricType::Counter, "outcome",
                         {{"ok", static_cast<double>(r.loads)},
                          {"failed", static_cast<double>(r.load_failures)}}));
  out.push_back(gauge("svdserve_repository_load_seconds",
                      "Seconds spent loading images from the factor repository since start",
                      r.load_seconds));
  out.push_back(labelled("svdserve_repository_writes_total",
                         "Images written to the factor repository, by outcome",
                         prometheus::MetricType::Counter, "outcome",
                         {{"ok", static_cast<double>(r.writes)},
                          {"failed", static_cast<double>(r.write_failures)}}));
  out.push_back(labelled("svdserve_repository_bytes_total",
                         "Bytes read from and written to the factor repository",
                         prometheus::MetricType::Counter, "direction",
                         {{"read", static_cast<double>(r.bytes_read)},
                          {"written", static_cast<double>(r.bytes_written)}}));
  out.push_back(gauge("svdserve_repository_corrupt_entries",
                      "Repository entries refused as torn, truncated or corrupt since start",
                      static_cast<double>(r.corrupt_entries)));
  out.push_back(gauge("svdserve_repository_writes_queued",
                      "Answered images waiting to be written (async durability)",
                      static_cast<double>(r.writes_queued)));
  // Whether host_buffer_pool_bytes fits the load: fallbacks growing means it does not.
  const HostBufferPoolStats& pool = v.host_buffers;
  // Limits are gauges of their own, out of the usage gauges' labels, so that a sum over a usage
  // gauge's labels is a usage.
  out.push_back(labelled("svdserve_host_buffer_pool_bytes",
                         "Reconstruct response memory: pooled (lent out or idle, at most the "
                         "capacity) and in use (lent out, pooled or fallback)",
                         prometheus::MetricType::Gauge, "state",
                         {{"pooled", static_cast<double>(pool.pooled_bytes)},
                          {"in_use", static_cast<double>(pool.in_use_bytes)}}));
  out.push_back(gauge("svdserve_host_buffer_pool_capacity_bytes",
                      "The cap on pooled response memory (host_buffer_pool_bytes)",
                      static_cast<double>(pool.capacity_bytes)));
  out.push_back(labelled("svdserve_host_buffers_total",
                         "Reconstruct response buffers by where they came from",
                         prometheus::MetricType::Counter, "source",
                         {{"reused", static_cast<double>(pool.reuses)},
                          {"allocated", static_cast<double>(pool.allocations)},
                          {"fallback", static_cast<double>(pool.fallbacks)}}));
  // At the budget, streams wait: their clients see them slow down (stream_budget.hpp).
  out.push_back(gauge("svdserve_stream_requests_computing",
                      "Requests of all ReconstructStream calls in the pipeline, not yet computed",
                      static_cast<double>(v.streams.computing)));
  out.push_back(gauge("svdserve_stream_requests_computing_budget",
                      "The limit on requests of all ReconstructStream calls computing at once",
                      static_cast<double>(v.streams.max_computing)));
  // Held at the budget with calls waiting: clients that read slowly (or not at all) hold it, or
  // host_buffer_pool_bytes is too small for the load (unsent_bytes_budget.hpp).
  out.push_back(gauge("svdserve_unsent_bytes",
                      "Response bytes made and not yet sent by gRPC, of all calls",
                      static_cast<double>(v.unsent.held_bytes)));
  out.push_back(gauge("svdserve_unsent_bytes_budget",
                      "The server-wide limit on response bytes not yet sent",
                      static_cast<double>(v.unsent.budget_bytes)));
  out.push_back(gauge("svdserve_calls_waiting_for_unsent_bytes",
                      "Calls waiting in line for response bytes before their work starts",
                      static_cast<double>(v.unsent.waiting_calls)));
  add_devices(v.devices, out);
  if (v.backend.device_memory_total_bytes > 0) {
    out.push_back(gauge("svdserve_gpu_factor_memory_bytes", "Device memory held by factors",
                        static_cast<double>(v.backend.device_memory_used_bytes)));
    out.push_back(gauge("svdserve_gpu_memory_total_bytes", "Device memory of the GPU",
                        static_cast<double>(v.backend.device_memory_total_bytes)));
  }
  if (v.backend.svd_matrices > 0) {
    out.push_back(labelled("svdserve_gpu_svd_matrices_total",
                           "Matrices solved by the batched SVD, and those redone exactly after "
                           "failing the residual check",
                           prometheus::MetricType::Counter, "outcome",
                           {{"solved", static_cast<double>(v.backend.svd_matrices)},
                            {"redone", static_cast<double>(v.backend.svd_matrices_redone)}}));
  }
  if (!v.backend.stream_busy_seconds.empty()) {
    prometheus::MetricFamily busy{"svdserve_gpu_stream_busy_seconds_total",
                                  "Time each CUDA stream of the pool held a batch",
                                  prometheus::MetricType::Counter, {}};
    for (std::size_t i = 0; i < v.backend.stream_busy_seconds.size(); ++i) {
      prometheus::ClientMetric metric;
      metric.label.push_back({"stream", std::to_string(i)});
      metric.counter.value = v.backend.stream_busy_seconds[i];
      busy.metric.push_back(metric);
    }
    out.push_back(busy);
  }
}

}  // namespace

std::string prometheus_text(const MetricsSink::Totals& totals, const LiveValues& live) {
  std::vector<prometheus::MetricFamily> families;
  add_recorded(totals, families);
  add_live(live, families);
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace svdserve
