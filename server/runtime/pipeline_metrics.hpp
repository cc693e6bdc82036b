#pragma once
// What the pipeline reports as it works. The process's metrics sink implements it; the runtime
// does not know where the numbers go.

#include <cstddef>
#include <string_view>

#include "server/runtime/job.hpp"

namespace svdserve {

class PipelineMetrics {
 public:
  virtual ~PipelineMetrics() = default;

  // One image job of `method` that reached the backend, whatever its outcome.
  virtual void record_job(std::string_view method, const StageTimes& times, double total_us) = 0;
  // One batch handed to the backend: its live jobs.
  virtual void record_batch(std::size_t size) = 0;
};

}  // namespace svdserve
