#pragma once
// The producer-consumer pipeline between the RPC handlers and a compute backend:
//
//   submit() --> decode queue --> loader threads (read file, decode) --+
//            \                                                         v
//             `-(reconstruct: nothing to decode)-------------> compute queue --> batcher
//                                                                                   |
//   on_done <-- worker threads (backend compute, store insert) <-------------- batch queue
//          <-- (reconstruct: the backend's completion threads finish raw outputs)
//          <-- encoder threads (PNG, JPEG) <-- encode queue <-- (the same completions)
//
// Only admission can refuse a job (queue full: RESOURCE_EXHAUSTED, or shutting down:
// UNAVAILABLE; on the loaders, compute estimated over max_compute or past the deadline:
// compute_admission.hpp); later stages wait for room, so an admitted job is never dropped. A job
// whose call is cancelled or past its deadline stops at the next stage boundary, or between the
// backend's planes while it computes.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/backend.hpp"
#include "server/runtime/bounded_queue.hpp"
#include "server/runtime/dynamic_batcher.hpp"
#include "server/runtime/factor_store.hpp"
#include "server/runtime/host_buffer_pool.hpp"
#include "server/runtime/image_codec.hpp"
#include "server/runtime/job.hpp"
#include "server/runtime/pipeline_metrics.hpp"

namespace svdserve {

struct PipelineOptions {
  unsigned loader_threads = 2;
  unsigned worker_threads = 2;
  unsigned encoder_threads = 2;
  std::size_t queue_capacity = 256;
  bool wait_when_full = false;  // else reject at once
  BatcherOptions batcher;
  ImageLimits image_limits;
  std::size_t max_output_bytes = 64u << 20;  // one response must fit in a gRPC message
  std::size_t host_buffer_pool_bytes = 256u << 20;  // cap on recycled output memory
  // Estimated compute a decompose or compress may take on one worker; zero: no limit.
  std::chrono::milliseconds max_compute{60'000};
};

class Pipeline {
 public:
  // backend, store and metrics must outlive the pipeline.
  Pipeline(PipelineOptions options, Backend& backend, FactorStore& store, PipelineMetrics& metrics);
  ~Pipeline();  // shutdown()
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Admits a job or completes it at once (on the calling thread) with RESOURCE_EXHAUSTED or
  // UNAVAILABLE. Either way job->on_done is called exactly once.
  void submit(JobPtr job);

  // Refuses new jobs, finishes every admitted one, joins all threads. Idempotent.
  void shutdown();

  [[nodiscard]] std::size_t decode_queue_depth() const { return decode_queue_.size(); }
  [[nodiscard]] std::size_t compute_queue_depth() const { return compute_queue_.size(); }
  [[nodiscard]] std::size_t encode_queue_depth() const { return encode_queue_.size(); }
  [[nodiscard]] int64_t jobs_in_flight() const noexcept { return jobs_in_flight_.load(); }
  [[nodiscard]] HostBufferPoolStats host_buffer_stats() const { return host_buffers_.stats(); }

 private:
  // A reconstruction waiting for its PNG or JPEG: the job, its raw u8 pixels and the batch that
  // owns the job (kept alive until the job is answered).
  struct EncodeTask {
    std::shared_ptr<Batch> batch;
    Job* job = nullptr;
    PixelBytes raw;
  };

  void loader_loop();
  void worker_loop();
  void encoder_loop();
  void encode(EncodeTask& task);
  void run_batch(std::shared_ptr<Batch> batch);
  // One batch's jobs (all of one kind) through the backend. Throws when the batch fails as a
  // whole; jobs it answers are marked answered.
  void run_jobs(const std::shared_ptr<Batch>& batch, std::vector<Job*>& jobs);
  void run_decompose(std::vector<Job*>& jobs);
  void run_compress(const std::shared_ptr<Batch>& batch, std::vector<Job*>& jobs);
  // Starts reconstructing each job at its rank from job->factors and returns; the backend's
  // completion (finish_reconstruct) answers raw outputs and queues PNG and JPEG ones for the
  // encoders. `batch` owns jobs.
  void reconstruct_into_pixels(const std::shared_ptr<Batch>& batch, const std::vector<Job*>& jobs);
  void finish_reconstruct(const std::shared_ptr<Batch>& batch, const std::vector<Job*>& jobs,
                          std::vector<PixelBytes>& pixels, Clock::time_point start,
                          std::exception_ptr error);
  // Where a job's reconstruction is written: pool memory or a string (see Job::pixels_in_pool).
  [[nodiscard]] PixelBytes output_for(const Job& job, std::size_t bytes);
  void complete(Job& job, std::exception_ptr error);
  // Takes one off jobs_in_flight_; the last thing a thread not joined by shutdown() may do.
  void leave_in_flight();

  const PipelineOptions options_;
  Backend& backend_;
  // Before the queues and threads: outputs come from it until the last job is done, and buffers
  // handed to gRPC may come back even later (they keep the pool's bookkeeping alive themselves).
  HostBufferPool host_buffers_;
  FactorStore& store_;
  PipelineMetrics& metrics_;

  BoundedQueue<JobPtr> decode_queue_;
  BoundedQueue<JobPtr> compute_queue_;
  BoundedQueue<Batch> batch_queue_;
  BoundedQueue<EncodeTask> encode_queue_;
  std::vector<std::jthread> loaders_;
  std::unique_ptr<DynamicBatcher> batcher_;
  std::vector<std::jthread> workers_;
  std::vector<std::jthread> encoders_;
  std::once_flag shutdown_once_;
  std::atomic<int64_t> jobs_in_flight_{0};
  std::mutex idle_mutex_;             // with idle_: shutdown waits for jobs_in_flight_ == 0
  std::condition_variable idle_;
};

}  // namespace svdserve
