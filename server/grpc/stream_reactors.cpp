// The two streaming reconstruct RPCs. Both submit one job per reconstruction and write the
// answers in request order through OrderedResponses. ReconstructStream is a raw method, like
// Reconstruct: each answer carries its pooled pixel buffer without a copy
// (reconstruct_response_encoder.hpp).

#include <algorithm>
#include <deque>
#include <mutex>
#include <set>

#include "kernels/errors.hpp"
#include "server/grpc/ordered_responses.hpp"
#include "server/grpc/reconstruct_response_encoder.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

// Answers one stream may hold before it stops reading requests: in the pipeline, done and
// waiting for their turn, or being written. Counting until written (not until computed) keeps a
// client that reads slowly, or not at all, from making the server hold its answers without
// limit; a fast client cannot fill the server's queues alone either. By count and by pixel
// bytes; one answer is always allowed, however large. All streams together are held to the
// server's StreamBudget as well (stream_budget.hpp).
constexpr uint64_t kMaxUnwrittenPerStream = 64;
constexpr uint64_t kMaxUnwrittenBytesPerStream = uint64_t{64} << 20;

// The pixel bytes a reconstruction will answer with (PNG, JPEG: at most about the raw u8 size).
uint64_t answer_bytes(const Job& job) {
  const uint64_t values = job.factors->shape().values();
  return job.format == OutputFormat::raw_f32 ? values * sizeof(float) : values;
}

class ReconstructStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public SvdService::OpenStream {
 public:
  ReconstructStreamReactor(SvdService& service, grpc::CallbackServerContext* ctx)
      : service_(service), budget_(service.stream_budget()), ctx_(ctx) {
    // Not under mutex_: the service takes its lock before ours (end_for_drain).
    const bool tracked = service_.track(*this);
    std::unique_lock lock(mutex_);
    if (finished_) return;
    if (!tracked) {
      draining_ = true;
      maybe_finish(lock);
      return;
    }
    StartRead(&request_);
  }

  void end_for_drain() override {
    std::unique_lock lock(mutex_);
    draining_ = true;
    maybe_finish(lock);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::unique_lock lock(mutex_);
      reads_done_ = true;
      maybe_finish(lock);
      return;
    }
    uint64_t sequence = 0;
    {
      std::lock_guard lock(mutex_);
      if (finished_) return;  // ended by the drain while this request arrived: not answered
      sequence = responses_.reserve();
      unwritten_answer_bytes_.push_back(0);  // until the job says (a failure answers no pixels)
      budget_.read();
    }
    try {
      JobPtr job = service_.make_reconstruct_job(ctx_, parse_reconstruct_request(request_));
      job->pixels_in_pool = true;
      {
        std::lock_guard lock(mutex_);
        const uint64_t bytes = answer_bytes(*job);
        unwritten_answer_bytes_[sequence - written_] = bytes;
        unwritten_bytes_ += bytes;
        budget_.add_bytes(bytes);
      }
      job->on_done = [this, sequence](Job& done, std::exception_ptr error) {
        grpc::ByteBuffer response;
        try {
          if (error) std::rethrow_exception(error);
          v1::ReconstructResponse fields;
          fill_reconstruction_fields(done, &fields);
          response = encode_reconstruct_stream_response(fields, std::move(done.pixels));
        } catch (...) {
          response = failure(to_status(std::current_exception()));
        }
        deliver(sequence, std::move(response));
      };
      service_.context().pipeline.submit(std::move(job));
    } catch (...) {
      deliver(sequence, failure(to_status(std::current_exception())));
    }
    std::lock_guard lock(mutex_);
    // The failure above may have ended the call; a draining stream reads no more.
    if (finished_ || client_gone_ || draining_) return;
    if (may_read()) {
      StartRead(&request_);
    } else {
      read_paused_ = true;
      budget_.stopped_reading();
    }
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mutex_);
    if (!ok) client_gone_ = true;
    grpc::ByteBuffer* next = mark_written();
    if (read_paused_ && may_read() && !client_gone_ && !draining_) {
      read_paused_ = false;
      budget_.reading_again();
      StartRead(&request_);
    }
    write_next(lock, next);
  }

  void OnCancel() override {
    std::lock_guard lock(mutex_);
    client_gone_ = true;
  }

  void OnDone() override {
    bool was_waiting = false;  // ended while waiting for its client
    {
      std::lock_guard lock(mutex_);
      was_waiting = read_paused_;
    }
    if (was_waiting) budget_.reading_again();
    service_.untrack(*this);
    service_.record("ReconstructStream", final_status_);
    delete this;
  }

 private:
  // The answer to a request that failed: its status only; the stream goes on.
  static grpc::ByteBuffer failure(const grpc::Status& status) {
    v1::ReconstructStreamResponse response;
    fill_status(status, response.mutable_status());
    return encode_message(response);
  }

  // Every request read comes here once, answered or failed: it no longer takes a place in the
  // compute queue's share of the budget (its bytes count until written).
  void deliver(uint64_t sequence, grpc::ByteBuffer response) {
    std::unique_lock lock(mutex_);
    budget_.computed();
    write_next(lock, responses_.deliver(sequence, std::move(response)));
  }

  // Whether to read another request (the caller holds mutex_): see kMaxUnwrittenPerStream. A
  // stream paused here reads again when one of its own writes completes (OnWriteDone).
  [[nodiscard]] bool may_read() const {
    const uint64_t unwritten = responses_.unwritten();
    return unwritten == 0 ||
           (unwritten < kMaxUnwrittenPerStream && unwritten_bytes_ < kMaxUnwrittenBytesPerStream &&
            budget_.has_room());
  }

  // The write in flight is done (or dropped): its bytes no longer count. Returns the next to
  // write.
  grpc::ByteBuffer* mark_written() {
    budget_.written(unwritten_answer_bytes_.front());
    unwritten_bytes_ -= unwritten_answer_bytes_.front();
    unwritten_answer_bytes_.pop_front();
    ++written_;
    return responses_.written();
  }

  // Starts the write of `next` (or drops it when the client is gone), then checks for the end.
  void write_next(std::unique_lock<std::mutex>& lock, grpc::ByteBuffer* next) {
    while (next != nullptr && client_gone_) next = mark_written();
    if (next != nullptr) {
      StartWrite(next);
      return;
    }
    maybe_finish(lock);
  }

  // Finish goes after the unlock, and the callers touch nothing after this: from a pipeline
  // thread (deliver), Finish may let gRPC run OnDone, which deletes this, at once.
  void maybe_finish(std::unique_lock<std::mutex>& lock) {
    if (finished_ || !responses_.idle()) return;
    if (!reads_done_ && !client_gone_ && !draining_) return;
    finished_ = true;
    if (client_gone_) {
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    } else if (!reads_done_) {
      final_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "server is shutting down: every request it read was answered; "
                                   "send the rest to another instance");
    } else {
      final_status_ = grpc::Status::OK;
    }
    const grpc::Status status = final_status_;
    lock.unlock();
    Finish(status);
  }

  SvdService& service_;
  StreamBudget& budget_;  // shared by all streams (thread-safe)
  grpc::CallbackServerContext* ctx_;
  grpc::ByteBuffer request_;  // only touched by the read path: one read at a time

  std::mutex mutex_;
  OrderedResponses<grpc::ByteBuffer> responses_;  // guarded by mutex_
  // Pixel bytes of each unwritten answer, from sequence written_ on, and their sum.
  std::deque<uint64_t> unwritten_answer_bytes_;   // guarded by mutex_
  uint64_t unwritten_bytes_ = 0;                  // guarded by mutex_
  uint64_t written_ = 0;                          // guarded by mutex_
  bool reads_done_ = false;                       // guarded by mutex_
  bool read_paused_ = false;                      // guarded by mutex_
  bool client_gone_ = false;                      // guarded by mutex_
  bool draining_ = false;                         // guarded by mutex_; reads no more
  bool finished_ = false;                         // guarded by mutex_
  grpc::Status final_status_;                     // set once, before Finish
};

class ReconstructProgressiveReactor final
    : public grpc::ServerWriteReactor<v1::ReconstructResponse> {
 public:
  ReconstructProgressiveReactor(SvdService& service, grpc::CallbackServerContext* ctx,
                                const v1::ReconstructProgressiveRequest& request)
      : service_(service) {
    const std::set<uint32_t> ranks(request.ranks().begin(), request.ranks().end());
    try {
      if (ranks.empty()) throw InvalidArgument("ranks is empty; give one or more ranks");
      // Validate every rank before starting any work, so a bad list fails as a whole.
      std::vector<JobPtr> jobs;
      for (uint32_t rank : ranks) {
        v1::ReconstructRequest item;
        item.set_id(request.id());
        item.set_rank(rank);
        item.set_format(request.format());
        item.set_jpeg_quality(request.jpeg_quality());
        jobs.push_back(service_.make_reconstruct_job(ctx, item));
      }
      std::unique_lock lock(mutex_);
      for (JobPtr& job : jobs) {
        const uint64_t sequence = responses_.reserve();
        job->on_done = [this, sequence](Job& done, std::exception_ptr error) {
          deliver(sequence, done, error);
        };
      }
      lock.unlock();
      for (JobPtr& job : jobs) service_.context().pipeline.submit(std::move(job));
    } catch (...) {
      std::unique_lock lock(mutex_);
      finish_with(lock, to_status(std::current_exception()));
    }
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mutex_);
    if (!ok && error_.ok()) error_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    write_next(lock, responses_.written());
  }

  void OnDone() override {
    service_.record("ReconstructProgressive", error_);
    delete this;
  }

 private:
  void deliver(uint64_t sequence, Job& done, std::exception_ptr error) {
    v1::ReconstructResponse response;
    std::unique_lock lock(mutex_);
    if (error && error_.ok()) error_ = to_status(error);
    if (!error) fill_reconstruction(done, &response);
    write_next(lock, responses_.deliver(sequence, std::move(response)));
  }

  // After the first error nothing more is written; the stream ends with that error.
  void write_next(std::unique_lock<std::mutex>& lock, v1::ReconstructResponse* next) {
    while (next != nullptr && !error_.ok()) next = responses_.written();
    if (next != nullptr) {
      StartWrite(next);
      return;
    }
    if (responses_.idle()) finish_with(lock, error_);
  }

  // As ReconstructStreamReactor::maybe_finish: Finish after the unlock, nothing touched after.
  void finish_with(std::unique_lock<std::mutex>& lock, const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    error_ = status;
    const grpc::Status final_status = status;
    lock.unlock();
    Finish(final_status);
  }

  SvdService& service_;
  std::mutex mutex_;
  OrderedResponses<v1::ReconstructResponse> responses_;  // guarded by mutex_
  grpc::Status error_;                                   // guarded by mutex_
  bool finished_ = false;                                // guarded by mutex_
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SvdService::ReconstructStream(
    grpc::CallbackServerContext* ctx) {
  return new ReconstructStreamReactor(*this, ctx);
}

grpc::ServerWriteReactor<v1::ReconstructResponse>* SvdService::ReconstructProgressive(
    grpc::CallbackServerContext* ctx, const v1::ReconstructProgressiveRequest* request) {
  return new ReconstructProgressiveReactor(*this, ctx, *request);
}

}  // namespace svdserve
