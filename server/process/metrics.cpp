#include "server/process/metrics.hpp"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

// 50 us .. ~13 s, doubling: covers a cached reconstruct and a 4096^2 CPU decomposition.
prometheus::Histogram::BucketBoundaries latency_buckets() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double b = 50e-6; b < 15.0; b *= 2) bounds.push_back(b);
  return bounds;
}

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

}  // namespace

class Metrics::LiveCollectable final : public prometheus::Collectable {
 public:
  explicit LiveCollectable(std::function<LiveValues()> sample) : sample_(std::move(sample)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const LiveValues v = sample_();
    std::vector<prometheus::MetricFamily> out;
    out.push_back(labelled("svdserve_queue_depth", "Jobs waiting in a pipeline queue",
                           prometheus::MetricType::Gauge, "queue",
                           {{"decode", static_cast<double>(v.decode_queue_depth)},
                            {"compute", static_cast<double>(v.compute_queue_depth)}}));
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
    // Whether host_buffer_pool_bytes fits the load: fallbacks growing means it does not.
    const HostBufferPoolStats& pool = v.host_buffers;
    out.push_back(labelled("svdserve_host_buffer_pool_bytes",
                           "Reconstruct response memory: pooled (lent out or idle, at most the "
                           "cap) and in use (lent out, pooled or fallback)",
                           prometheus::MetricType::Gauge, "state",
                           {{"pooled", static_cast<double>(pool.pooled_bytes)},
                            {"in_use", static_cast<double>(pool.in_use_bytes)},
                            {"capacity", static_cast<double>(pool.capacity_bytes)}}));
    out.push_back(labelled("svdserve_host_buffers_total",
                           "Reconstruct response buffers by where they came from",
                           prometheus::MetricType::Counter, "source",
                           {{"reused", static_cast<double>(pool.reuses)},
                            {"allocated", static_cast<double>(pool.allocations)},
                            {"fallback", static_cast<double>(pool.fallbacks)}}));
    // At the budget, streams wait: their clients see them slow down (stream_budget.hpp).
    out.push_back(labelled("svdserve_stream_requests_computing",
                           "Requests of all ReconstructStream calls read and not yet computed, "
                           "and the budget they share",
                           prometheus::MetricType::Gauge, "state",
                           {{"held", static_cast<double>(v.streams.computing)},
                            {"budget", static_cast<double>(v.streams.max_computing)}}));
    out.push_back(labelled("svdserve_stream_unwritten_bytes",
                           "Pixel bytes of ReconstructStream answers not yet written, and the "
                           "budget they share",
                           prometheus::MetricType::Gauge, "state",
                           {{"held", static_cast<double>(v.streams.unwritten_bytes)},
                            {"budget", static_cast<double>(v.streams.max_unwritten_bytes)}}));
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
    return out;
  }

 private:
  std::function<LiveValues()> sample_;
};

Metrics::Metrics(int port, std::function<LiveValues()> sample)
    : registry_(std::make_shared<prometheus::Registry>()),
      live_(std::make_shared<LiveCollectable>(std::move(sample))) {
  requests_ = &prometheus::BuildCounter()
                   .Name("svdserve_requests_total")
                   .Help("RPCs answered, by method and gRPC status code")
                   .Register(*registry_);
  stage_seconds_ = &prometheus::BuildHistogram()
                        .Name("svdserve_stage_duration_seconds")
                        .Help("Time per image in each pipeline stage")
                        .Register(*registry_);
  batch_size_ = &prometheus::BuildHistogram()
                     .Name("svdserve_batch_size")
                     .Help("Images per batch run on the backend")
                     .Register(*registry_)
                     .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256});
  endpoint_ = std::make_unique<MetricsHttpEndpoint>(port, [this] { return render(); });
}

Metrics::~Metrics() = default;

std::string Metrics::render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (auto& family : live_->Collect()) families.push_back(std::move(family));
  return prometheus::TextSerializer().Serialize(families);
}

void Metrics::record_call(const std::string& method, grpc::StatusCode code) {
  requests_->Add({{"method", method}, {"code", code_name(code)}}).Increment();
}

void Metrics::record_job(const StageTimes& times, double total_us) {
  static const auto buckets = latency_buckets();
  auto observe = [&](const char* stage, double us) {
    stage_seconds_->Add({{"stage", stage}}, buckets).Observe(us / kMicrosecondsPerSecond);
  };
  observe("queue", times.queue_us);
  if (times.decode_us > 0) observe("decode", times.decode_us);
  observe("compute", times.compute_us);
  if (times.encode_us > 0) observe("encode", times.encode_us);
  observe("total", total_us);
}

void Metrics::record_batch(std::size_t size) { batch_size_->Observe(static_cast<double>(size)); }

}  // namespace svdserve
