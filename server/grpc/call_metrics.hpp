#pragma once
// Where the service counts each finished call and where GetStats reads the counters. The
// process's metrics sink implements it, so /metrics and GetStats read the same numbers.

#include <grpcpp/support/status.h>

#include <string>
#include <string_view>
#include <vector>

#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

// The labels users will see, so that each series can be shown from the start, at zero (a rate
// over a series that appears with its first event misses that event).
struct MetricLabels {
  std::vector<std::string> methods;       // every RPC of svdserve.v1.SvdServe
  std::vector<std::string> item_methods;  // RPCs whose items each have a status
  std::vector<std::string> job_methods;   // RPCs that run pipeline jobs
  std::vector<grpc::StatusCode> codes;    // OK and what the service answers with
};
[[nodiscard]] MetricLabels service_metric_labels();

class CallMetrics {
 public:
  virtual ~CallMetrics() = default;

  // One RPC ended with `code`.
  virtual void record_call(std::string_view method, grpc::StatusCode code) = 0;
  // One item of a ReconstructStream or ReconstructBatch call was answered with `code`.
  virtual void record_item(std::string_view method, grpc::StatusCode code) = 0;
  // GetStats' counters: methods, items, latencies, images_per_second, batches, mean_batch_size and
  // uptime_s (the service adds what it reads from the pipeline and the store).
  virtual void fill_stats(v1::GetStatsResponse& out) const = 0;
};

}  // namespace svdserve
