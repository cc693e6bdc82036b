#pragma once
// Where the service counts each finished call and where GetStats reads the counters. The
// process's metrics sink implements it, so /metrics and GetStats read the same numbers.

#include <grpcpp/support/status.h>

#include <string_view>

#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

class CallMetrics {
 public:
  virtual ~CallMetrics() = default;

  // One RPC ended with `code`.
  virtual void record_call(std::string_view method, grpc::StatusCode code) = 0;
  // GetStats' counters: methods, latencies, images_per_second, batches, mean_batch_size and
  // uptime_s (the service adds what it reads from the pipeline and the store).
  virtual void fill_stats(v1::GetStatsResponse& out) const = 0;
};

}  // namespace svdserve
