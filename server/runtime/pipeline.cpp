#include "server/runtime/pipeline.hpp"

#include <algorithm>

#include "kernels/errors.hpp"
#include "kernels/spectrum.hpp"
#include "kernels/trace.hpp"
#include "server/runtime/compute_admission.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

bool is_cancelled(const Job& job) { return job.is_cancelled && job.is_cancelled(); }

// Called at every stage boundary so that dead requests stop using resources.
void check_alive(const Job& job) {
  if (is_cancelled(job)) throw Cancelled("request was cancelled by the client");
  if (Clock::now() >= job.deadline) {
    throw DeadlineExceeded(std::string("deadline passed before the ") + job_kind_name(job.kind) +
                           " job could run; allow a longer deadline or send less at once");
  }
}

// The backend's stop check while it computes a job: the same conditions as check_alive.
bool should_stop(const Job& job) { return is_cancelled(job) || Clock::now() >= job.deadline; }

// The answer for a job the backend stopped (it gave no factors): cancelled, else past its
// deadline, which does not come back.
std::exception_ptr stopped_error(const Job& job) {
  if (is_cancelled(job)) {
    return std::make_exception_ptr(Cancelled("request was cancelled by the client"));
  }
  return std::make_exception_ptr(DeadlineExceeded(
      std::string("deadline passed while the ") + job_kind_name(job.kind) +
      " job was computing; allow a longer deadline, ask for a lower rank or send a smaller image"));
}

OutputPixels output_pixels(OutputFormat format) {
  return format == OutputFormat::raw_f32 ? OutputPixels::f32 : OutputPixels::u8;
}

// What a failed batch's log line says: the typed error's message, or what else was thrown.
std::string describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

double error_at_rank(const Factors& factors, uint32_t rank) {
  return against_image_energy(factors)
             ? relative_error_at_rank(factors.all_singular_values(), rank, factors.energy())
             : relative_error_at_rank(factors.all_singular_values(), rank);
}

}  // namespace

Pipeline::Pipeline(PipelineOptions options, Backend& backend, FactorStore& store,
                   PipelineMetrics& metrics)
    : options_(options),
      backend_(backend),
      host_buffers_(backend, options.host_buffer_pool_bytes),
      store_(store),
      metrics_(metrics),
      decode_queue_(options.queue_capacity),
      compute_queue_(options.queue_capacity),
      // Enough batches ready for every worker to pick the next one without waiting.
      batch_queue_(std::max<std::size_t>(2, 2 * options.worker_threads)),
      encode_queue_(options.queue_capacity) {
  for (unsigned i = 0; i < options_.encoder_threads; ++i) {
    encoders_.emplace_back([this] { encoder_loop(); });
  }
  for (unsigned i = 0; i < options_.loader_threads; ++i) {
    loaders_.emplace_back([this] { loader_loop(); });
  }
  batcher_ = std::make_unique<DynamicBatcher>(options_.batcher, compute_queue_, batch_queue_);
  for (unsigned i = 0; i < options_.worker_threads; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

Pipeline::~Pipeline() { shutdown(); }

void Pipeline::shutdown() {
  std::call_once(shutdown_once_, [this] {
    // Close stage by stage, in flow order, so each stage drains into the next before it closes.
    decode_queue_.close();
    loaders_.clear();  // joins
    compute_queue_.close();
    batcher_.reset();  // joins; closes batch_queue_ after flushing partial batches
    workers_.clear();  // joins
    // Batches the workers handed to the backend finish on its completion threads, and their PNG
    // and JPEG answers on the encoders, which run until every job is answered.
    {
      std::unique_lock lock(idle_mutex_);
      idle_.wait(lock, [this] { return jobs_in_flight_.load() == 0; });
    }
    encode_queue_.close();
    encoders_.clear();  // joins
  });
}

void Pipeline::submit(JobPtr job) {
  jobs_in_flight_.fetch_add(1);  // complete() takes it off again, whatever the outcome
  job->stage_entered = Clock::now();
  const bool needs_decode = job->kind != JobKind::reconstruct;
  auto& queue = needs_decode ? decode_queue_ : compute_queue_;
  const PushResult result = options_.wait_when_full || job->wait_for_room
                                ? queue.push_until(job, job->deadline)
                                : queue.try_push(job);
  switch (result) {
    case PushResult::ok:
      return;
    case PushResult::full:
      complete(*job, std::make_exception_ptr(ResourceExhausted(
                         std::string(needs_decode ? "decode" : "compute") + " queue is full (" +
                         std::to_string(queue.capacity()) +
                         " jobs); retry with backoff or raise queue_capacity")));
      return;
    case PushResult::closed:
      complete(*job, std::make_exception_ptr(
                         Unavailable("server is shutting down and accepts no new work")));
      return;
  }
}

void Pipeline::loader_loop() {
  trace::name_current_thread("svd-loader");
  const DeviceJpegFilter device_decodes = [this](const JpegHeader& header) {
    return backend_.decodes_jpeg(header);
  };
  while (std::optional<JobPtr> next = decode_queue_.pop()) {
    JobPtr job = std::move(*next);
    try {
      trace::ScopedRange range("load");
      job->times.queue_us += micros_since(job->stage_entered);
      check_alive(*job);
      const Clock::time_point decode_start = Clock::now();
      const ShapeCheck admit = [&](const ImageShape& shape) {
        admit_compute(*job, shape, backend_, options_.max_compute);
      };
      job->image = decode_image(job->source, options_.image_limits, device_decodes, admit);
      admit(job->image.shape);  // again with the channels decoded, which a header may not tell
      job->times.decode_us = micros_since(decode_start);
      job->stage_entered = Clock::now();
    } catch (...) {
      complete(*job, std::current_exception());
      continue;
    }
    (void)compute_queue_.push(job);  // waits for room; closed only after loaders are joined
  }
}

void Pipeline::worker_loop() {
  trace::name_current_thread("svd-worker");
  while (std::optional<Batch> batch = batch_queue_.pop()) {
    run_batch(std::make_shared<Batch>(std::move(*batch)));
  }
}

void Pipeline::encoder_loop() {
  trace::name_current_thread("svd-encoder");
  while (std::optional<EncodeTask> next = encode_queue_.pop()) {
    encode(*next);
  }
}

void Pipeline::encode(EncodeTask& task) {
  Job& job = *task.job;
  try {
    job.times.queue_us += micros_since(job.stage_entered);
    check_alive(job);
    const Clock::time_point encode_start = Clock::now();
    const ImageShape& shape = job.factors->shape();
    job.pixels = PixelBytes(job.format == OutputFormat::jpeg
                                ? encode_jpeg(task.raw.bytes(), shape, job.jpeg_quality)
                                : encode_png(task.raw.bytes(), shape));
    job.times.encode_us = micros_since(encode_start);
    task.raw = {};  // the raw pixels go back to the pool before the answer
    complete(job, nullptr);
  } catch (...) {
    task.raw = {};
    complete(job, std::current_exception());
  }
}

void Pipeline::run_batch(std::shared_ptr<Batch> batch) {
  trace::ScopedRange range("batch");
  // Drop jobs that died while queued: a cancelled job never reaches the backend.
  std::vector<Job*> live;
  live.reserve(batch->size());
  for (JobPtr& job : *batch) {
    job->times.queue_us += micros_since(job->stage_entered);
    try {
      check_alive(*job);
      live.push_back(job.get());
    } catch (...) {
      complete(*job, std::current_exception());
    }
  }
  if (live.empty()) return;
  metrics_.record_batch(live.size());
  for (Job* job : live) job->times.batch_size = static_cast<uint32_t>(live.size());

  try {
    run_jobs(batch, live);
  } catch (const InvalidArgument& e) {
    // One bad image (a damaged JPEG, a non-finite sample) fails the batch's decomposition as a
    // whole: run the batch's other requests one by one, so that only its own request fails.
    if (live.size() == 1) {
      complete(*live.front(), std::current_exception());
      return;
    }
    log().warn("batch rejected kind={} size={} error=\"{}\"; retrying its jobs singly",
               job_kind_name(live.front()->kind), live.size(), e.what());
    for (Job* job : live) {
      if (job->answered) continue;
      std::vector<Job*> alone{job};
      try {
        run_jobs(batch, alone);
      } catch (...) {
        complete(*job, std::current_exception());
      }
    }
  } catch (...) {
    // The whole batch failed (e.g. a solver error): fail each of its own requests that is not
    // answered yet, keep serving.
    const std::exception_ptr error = std::current_exception();
    log().error("batch failed kind={} size={} error={}", job_kind_name(live.front()->kind),
                live.size(), describe(error));
    for (Job* job : live) {
      if (!job->answered) complete(*job, error);
    }
  }
}

void Pipeline::run_jobs(const std::shared_ptr<Batch>& batch, std::vector<Job*>& jobs) {
  switch (jobs.front()->kind) {
    case JobKind::decompose: run_decompose(jobs); break;
    case JobKind::reconstruct: reconstruct_into_pixels(batch, jobs); break;
    case JobKind::compress: run_compress(batch, jobs); break;
  }
}

void Pipeline::run_decompose(std::vector<Job*>& jobs) {
  std::vector<const DecodedImage*> images;
  images.reserve(jobs.size());
  for (Job* job : jobs) images.push_back(&job->image);
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<const Factors>> factors = backend_.decompose(
      images, jobs.front()->max_rank, [&jobs](std::size_t i) { return should_stop(*jobs[i]); });
  const double compute_us = micros_since(start);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Job& job = *jobs[i];
    job.times.compute_us = compute_us;
    if (!factors[i]) {
      complete(job, stopped_error(job));
      continue;
    }
    try {
      job.evicted_ids = store_.insert(job.image_id, factors[i]);
      job.factors = std::move(factors[i]);
      job.image = {};  // the samples are no longer needed; free them before answering
      complete(job, nullptr);
    } catch (...) {
      complete(job, std::current_exception());
    }
  }
}

void Pipeline::run_compress(const std::shared_ptr<Batch>& batch, std::vector<Job*>& jobs) {
  // One decomposition for the batch, deep enough for every job's rank.
  uint32_t max_rank = 1;
  std::vector<Job*> valid;
  for (Job* job : jobs) {
    try {
      max_rank = std::max(max_rank, RankValidator::rank_to_decompose(job->rank_choice,
                                                                     job->image.shape));
      valid.push_back(job);
    } catch (...) {
      complete(*job, std::current_exception());
    }
  }
  if (valid.empty()) return;
  std::vector<const DecodedImage*> images;
  for (Job* job : valid) images.push_back(&job->image);
  const Clock::time_point start = Clock::now();
  std::vector<std::shared_ptr<const Factors>> factors = backend_.decompose(
      images, max_rank, [&valid](std::size_t i) { return should_stop(*valid[i]); });
  const double decompose_us = micros_since(start);
  std::vector<Job*> decomposed;
  for (std::size_t i = 0; i < valid.size(); ++i) {
    Job& job = *valid[i];
    job.image = {};
    job.times.compute_us = decompose_us;
    if (!factors[i]) {
      complete(job, stopped_error(job));
      continue;
    }
    job.factors = std::move(factors[i]);
    decomposed.push_back(&job);
  }
  if (decomposed.empty()) return;
  reconstruct_into_pixels(batch, decomposed);
}

PixelBytes Pipeline::output_for(const Job& job, std::size_t bytes) {
  // PNG's and JPEG's raw pixels never leave the server, so pool memory suits them too: on the GPU
  // the copy lands there directly, and nothing is zero-filled first.
  if (job.pixels_in_pool || is_encoded(job.format)) {
    return PixelBytes(host_buffers_.acquire(bytes));
  }
  return PixelBytes(std::string(bytes, '\0'));
}

void Pipeline::reconstruct_into_pixels(const std::shared_ptr<Batch>& batch,
                                       const std::vector<Job*>& jobs) {
  // What the completion needs, kept alive until the backend calls it: the batch owns the jobs.
  struct Pending {
    std::shared_ptr<Batch> batch;
    std::vector<Job*> runnable;
    std::vector<PixelBytes> outputs;  // per runnable job: raw pixels (the answer, or PNG/JPEG input)
    Clock::time_point start;
  };
  auto pending = std::make_shared<Pending>();
  pending->batch = batch;
  std::vector<ReconstructItem> items;
  items.reserve(jobs.size());
  pending->outputs.reserve(jobs.size());  // no reallocation: items point into these buffers
  pending->runnable.reserve(jobs.size());
  for (Job* job : jobs) {
    try {
      job->rank = RankValidator::resolve(job->rank_choice, *job->factors);
      const ImageShape& shape = job->factors->shape();
      check_output_format(job->format, shape);  // before any work: compress learns it only here
      const OutputPixels pixels = output_pixels(job->format);
      const std::size_t bytes = shape.values() * bytes_per_value(pixels);
      if (bytes > options_.max_output_bytes) {
        throw ResourceExhausted("the reconstruction is " + std::to_string(bytes) +
                                " bytes, over max_message_bytes (" +
                                std::to_string(options_.max_output_bytes) +
                                "); ask for OUTPUT_FORMAT_PNG or RAW_U8");
      }
      PixelBytes& target = pending->outputs.emplace_back(output_for(*job, bytes));
      items.push_back({job->factors.get(), job->rank, pixels, target.writable()});
      pending->runnable.push_back(job);
    } catch (...) {
      complete(*job, std::current_exception());
    }
  }
  if (items.empty()) return;
  pending->start = Clock::now();
  backend_.reconstruct_async(std::move(items), [this, pending](std::exception_ptr error) {
    finish_reconstruct(pending->batch, pending->runnable, pending->outputs, pending->start, error);
  });
}

void Pipeline::finish_reconstruct(const std::shared_ptr<Batch>& batch,
                                  const std::vector<Job*>& jobs, std::vector<PixelBytes>& pixels,
                                  Clock::time_point start, std::exception_ptr error) {
  // This thread is not joined by shutdown(): counted in flight until it stops using the encode
  // queue, so that the last encoder's answer cannot let the pipeline go away under it.
  jobs_in_flight_.fetch_add(1);
  const double compute_us = micros_since(start);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Job& job = *jobs[i];
    if (error) {
      pixels[i] = {};  // back to the pool before the answer
      complete(job, error);
      continue;
    }
    try {
      job.times.compute_us += compute_us;
      job.relative_error = error_at_rank(*job.factors, job.rank);
      if (is_encoded(job.format)) {
        job.stage_entered = Clock::now();
        EncodeTask task{batch, &job, std::move(pixels[i])};
        // Waits while the encoders are a full queue behind; closed only once every job is done.
        if (encode_queue_.push(task) == PushResult::ok) continue;
        throw Unavailable("server is shutting down and encodes no more answers");
      }
      job.pixels = std::move(pixels[i]);
      complete(job, nullptr);
    } catch (...) {
      pixels[i] = {};
      complete(job, std::current_exception());
    }
  }
  leave_in_flight();
}

void Pipeline::complete(Job& job, std::exception_ptr error) {
  job.answered = true;
  try {
    const double total_us = micros_since(job.arrived);
    if (job.times.compute_us > 0) metrics_.record_job(job.method, job.times, total_us);
    job.on_done(job, error);
  } catch (const std::exception& e) {
    // on_done only builds a response and finishes the RPC; an exception here is a bug.
    log().error("completion handler threw: {}", e.what());
  } catch (...) {
    log().error("completion handler threw a non-standard exception");
  }
  leave_in_flight();
}

void Pipeline::leave_in_flight() {
  // Under the lock: once shutdown() sees zero it may destroy the pipeline, so nothing may touch
  // `this` after the lock is released.
  std::lock_guard lock(idle_mutex_);
  if (jobs_in_flight_.fetch_sub(1) == 1) idle_.notify_all();
}

}  // namespace svdserve
