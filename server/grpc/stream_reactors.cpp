// The two streaming reconstruct RPCs. Both submit one job per reconstruction, once its answer's
// bytes are reserved from the server's UnsentBytesBudget, and write the answers in request order
// through OrderedResponses. ReconstructStream is a raw method, like
// Reconstruct: each answer carries its pooled pixel buffer without a copy
// (reconstruct_response_encoder.hpp).

#include <algorithm>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <variant>
#include <vector>

#include "kernels/errors.hpp"
#include "server/grpc/ordered_responses.hpp"
#include "server/grpc/reconstruct_response_encoder.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

using Reservation = UnsentBytesBudget::Reservation;
using Ticket = UnsentBytesBudget::Ticket;

// Answers one call may hold before it stops asking for more: in the pipeline, done and waiting
// for their turn, or being written. Counting until written (not until computed) keeps a client
// that reads slowly, or not at all, from taking the whole server-wide budget alone; a fast
// client cannot fill the server's queues alone either. By count and by pixel bytes; these let one
// answer through however large. All calls together are held to the UnsentBytesBudget
// (unsent_bytes_budget.hpp), and all streams to the StreamBudget (stream_budget.hpp).
constexpr uint64_t kMaxUnwrittenPerCall = 64;
constexpr uint64_t kMaxUnwrittenBytesPerCall = uint64_t{64} << 20;

// A ReconstructProgressive answer is a protobuf message: held twice while it is serialized (the
// message and its bytes), then as bytes until sent.
constexpr uint64_t kSerializedCopies = 2;

uint64_t answer_bytes(const Job& job) {
  return reconstruction_bytes(job.factors->shape(), job.format);
}

// Every step of a stream reactor ends here, under its lock: what was sent gives its bytes back
// after the unlock (that may start other calls on this thread, which take their own locks), and
// a call that is done finishes. Finish goes after the unlock and the caller touches nothing after
// this: from a thread that is not a gRPC reaction, Finish may let gRPC run OnDone, which deletes
// the reactor, at once.
template <typename Reactor>
void end_step(Reactor& reactor, std::unique_lock<std::mutex>& lock) {
  std::vector<Reservation> sent = std::move(reactor.sent_);
  reactor.sent_.clear();
  const bool finish = reactor.should_finish();
  grpc::Status status;
  if (finish) {
    reactor.finished_ = true;
    status = reactor.final_status();
  }
  lock.unlock();
  if (finish) reactor.Finish(status);
}

class ReconstructStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public SvdService::OpenStream {
 public:
  ReconstructStreamReactor(SvdService& service, grpc::CallbackServerContext* ctx)
      : service_(service),
        budget_(service.stream_budget()),
        unsent_(service.unsent_bytes()),
        ctx_(ctx) {
    try {
      caller_ = service_.authorize(ctx, kMethod);
    } catch (...) {
      std::unique_lock lock(mutex_);
      refused_ = to_status(std::current_exception());
      end_step(*this, lock);
      return;
    }
    // Not under mutex_: the service takes its lock before ours (end_for_drain).
    const bool tracked = service_.track(*this);
    std::unique_lock lock(mutex_);
    if (finished_) return;
    if (!tracked) {
      draining_ = true;
      end_step(*this, lock);
      return;
    }
    StartRead(&request_);
  }

  void end_for_drain() override {
    std::unique_lock lock(mutex_);
    draining_ = true;
    end_step(*this, lock);
  }

  void OnReadDone(bool ok) override {
    std::unique_lock lock(mutex_);
    if (!ok) {
      reads_done_ = true;
      end_step(*this, lock);
      return;
    }
    if (finished_) return;  // ended by the drain while this request arrived: not answered
    const uint64_t sequence = responses_.reserve();
    reservations_.emplace_back();  // none until its bytes are reserved (a failure needs none)
    lock.unlock();
    JobPtr job;
    try {
      job = service_.make_reconstruct_job(ctx_, parse_reconstruct_request(request_), kMethod,
                                          caller_);
      job->pixels_in_pool = true;
      job->on_done = [this, sequence](Job& done, std::exception_ptr error) {
        budget_.computed();
        grpc::ByteBuffer response;
        try {
          if (error) std::rethrow_exception(error);
          v1::ReconstructResponse fields;
          fill_reconstruction_fields(done, &fields);
          response = encode_reconstruct_stream_response(fields, std::move(done.pixels));
          service_.record_item(kMethod, grpc::StatusCode::OK);
        } catch (...) {
          response = failure(to_status(std::current_exception()));
        }
        deliver(sequence, std::move(response));
      };
    } catch (...) {
      deliver(sequence, failure(to_status(std::current_exception())));
      lock.lock();
      read_on(lock);
      return;
    }
    lock.lock();
    auto reserved = unsent_.reserve(answer_bytes(*job), [this](Reservation granted_bytes) {
      granted(std::move(granted_bytes));
    });
    if (const auto* ticket = std::get_if<Ticket>(&reserved)) {
      waiting_.emplace(Waiting{sequence, *ticket, std::move(job)});
      end_step(*this, lock);  // reads on once granted
      return;
    }
    hold(sequence, std::move(std::get<Reservation>(reserved)));
    lock.unlock();
    budget_.read();
    service_.context().pipeline.submit(std::move(job));
    lock.lock();
    read_on(lock);
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
    std::optional<Waiting> withdrawn;
    std::optional<Ticket> ticket;
    {
      std::lock_guard lock(mutex_);
      client_gone_ = true;
      if (waiting_) ticket = waiting_->ticket;
    }
    // Outside the lock: withdrawing may start the calls behind this one, on this thread.
    if (ticket && unsent_.withdraw(*ticket)) {
      std::lock_guard lock(mutex_);
      withdrawn = std::move(waiting_);
      waiting_.reset();
    }
    if (withdrawn) {
      deliver(withdrawn->sequence,
              failure(grpc::Status(grpc::StatusCode::CANCELLED, "client went away")));
    }
  }

  void OnDone() override {
    bool was_waiting = false;  // ended while waiting for its client
    {
      std::lock_guard lock(mutex_);
      was_waiting = read_paused_;
    }
    if (was_waiting) budget_.reading_again();
    service_.untrack(*this);
    service_.record(kMethod, final_status_);
    delete this;
  }

 private:
  template <typename Reactor>
  friend void end_step(Reactor& reactor, std::unique_lock<std::mutex>& lock);

  // A request read whose answer's bytes the budget could not give yet: not submitted.
  struct Waiting {
    uint64_t sequence = 0;
    Ticket ticket = 0;
    JobPtr job;
  };

  static constexpr const char* kMethod = "ReconstructStream";

  // The answer to a request that failed: its status only; the stream goes on.
  grpc::ByteBuffer failure(const grpc::Status& status) {
    service_.record_item(kMethod, status.error_code());
    v1::ReconstructStreamResponse response;
    fill_status(status, response.mutable_status());
    return encode_message(response);
  }

  // The waiting request's bytes are reserved (on the thread that gave bytes back): it runs, and
  // the stream reads on.
  void granted(Reservation reservation) {
    JobPtr job;
    {
      std::lock_guard lock(mutex_);
      hold(waiting_->sequence, std::move(reservation));
      job = std::move(waiting_->job);
      waiting_.reset();
      ++submitting_;  // no Finish while this still touches the stream after submit
    }
    budget_.read();
    service_.context().pipeline.submit(std::move(job));
    std::unique_lock lock(mutex_);
    --submitting_;
    read_on(lock);
  }

  // Every request read comes here once, answered or failed (its bytes count until written).
  void deliver(uint64_t sequence, grpc::ByteBuffer response) {
    std::unique_lock lock(mutex_);
    write_next(lock, responses_.deliver(sequence, std::move(response)));
  }

  // The caller holds mutex_.
  void hold(uint64_t sequence, Reservation reservation) {
    unwritten_bytes_ += reservation.bytes();
    reservations_[sequence - written_] = std::move(reservation);  // replaces an empty one
  }

  // Reads the next request, or stops until one of this stream's answers is written. A draining
  // stream reads no more.
  void read_on(std::unique_lock<std::mutex>& lock) {
    if (!finished_ && !client_gone_ && !draining_) {
      if (may_read()) {
        StartRead(&request_);
      } else {
        read_paused_ = true;
        budget_.stopped_reading();
      }
    }
    end_step(*this, lock);
  }

  // Whether to read another request (the caller holds mutex_): see kMaxUnwrittenPerCall. A
  // stream paused here reads again when one of its own writes completes (OnWriteDone).
  [[nodiscard]] bool may_read() const {
    const uint64_t unwritten = responses_.unwritten();
    return unwritten == 0 ||
           (unwritten < kMaxUnwrittenPerCall && unwritten_bytes_ < kMaxUnwrittenBytesPerCall &&
            budget_.has_room());
  }

  // The write in flight is done (or dropped): its bytes are given back at the end of the step.
  // Returns the next to write.
  grpc::ByteBuffer* mark_written() {
    unwritten_bytes_ -= reservations_.front().bytes();
    sent_.push_back(std::move(reservations_.front()));
    reservations_.pop_front();
    ++written_;
    return responses_.written();
  }

  // Starts the write of `next` (or drops it when the client is gone), then ends the step.
  void write_next(std::unique_lock<std::mutex>& lock, grpc::ByteBuffer* next) {
    while (next != nullptr && client_gone_) next = mark_written();
    if (next != nullptr) StartWrite(next);
    end_step(*this, lock);
  }

  [[nodiscard]] bool should_finish() const {
    return !finished_ && submitting_ == 0 && !waiting_ && responses_.idle() &&
           (reads_done_ || client_gone_ || draining_ || !refused_.ok());
  }
  [[nodiscard]] grpc::Status final_status() {
    if (!refused_.ok()) {
      final_status_ = refused_;
    } else if (client_gone_) {
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    } else if (!reads_done_) {
      final_status_ = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "server is shutting down: every request it read was answered; "
                                   "send the rest to another instance");
    } else {
      final_status_ = grpc::Status::OK;
    }
    return final_status_;
  }

  SvdService& service_;
  StreamBudget& budget_;        // shared by all streams (thread-safe)
  UnsentBytesBudget& unsent_;   // shared by all calls (thread-safe)
  grpc::CallbackServerContext* ctx_;
  Caller caller_;             // set once, before the first read
  grpc::ByteBuffer request_;  // only touched by the read path: one read at a time

  std::mutex mutex_;
  OrderedResponses<grpc::ByteBuffer> responses_;  // guarded by mutex_
  // The bytes reserved for each unwritten answer, from sequence written_ on, and their sum.
  std::deque<Reservation> reservations_;  // guarded by mutex_
  uint64_t unwritten_bytes_ = 0;          // guarded by mutex_
  std::vector<Reservation> sent_;         // guarded by mutex_; given back at the end of a step
  uint64_t written_ = 0;                  // guarded by mutex_
  std::optional<Waiting> waiting_;        // guarded by mutex_
  int submitting_ = 0;                    // guarded by mutex_
  bool reads_done_ = false;               // guarded by mutex_
  bool read_paused_ = false;              // guarded by mutex_
  bool client_gone_ = false;              // guarded by mutex_
  bool draining_ = false;                 // guarded by mutex_; reads no more
  bool finished_ = false;                 // guarded by mutex_
  grpc::Status refused_;                  // guarded by mutex_; not authorized: read nothing
  grpc::Status final_status_;             // set once, before Finish
};

// The ranks in increasing order, each reserved from the UnsentBytesBudget before it is
// submitted, at most kMaxUnwrittenPerCall ahead of what the client has read.
// Raw, as every method (service.hpp): the request is parsed here, each answer serialized as it
// is delivered.
class ReconstructProgressiveReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  ReconstructProgressiveReactor(SvdService& service, grpc::CallbackServerContext* ctx,
                                const grpc::ByteBuffer& request_bytes)
      : service_(service), unsent_(service.unsent_bytes()) {
    try {
      const Caller caller = service_.authorize(ctx, "ReconstructProgressive");
      v1::ReconstructProgressiveRequest request;
      parse_request(request_bytes, request);
      const std::set<uint32_t> ranks(request.ranks().begin(), request.ranks().end());
      if (ranks.empty()) throw InvalidArgument("ranks is empty; give one or more ranks");
      // Validate every rank before starting any work, so a bad list fails as a whole.
      for (uint32_t rank : ranks) {
        v1::ReconstructRequest item;
        item.set_id(request.id());
        item.set_rank(rank);
        item.set_format(request.format());
        item.set_jpeg_quality(request.jpeg_quality());
        jobs_.push_back(
            service_.make_reconstruct_job(ctx, item, "ReconstructProgressive", caller));
      }
    } catch (...) {
      std::unique_lock lock(mutex_);
      error_ = to_status(std::current_exception());
      end_step(*this, lock);
      return;
    }
    std::unique_lock lock(mutex_);
    start_next(lock);
  }

  void OnWriteDone(bool ok) override {
    std::unique_lock lock(mutex_);
    if (!ok && error_.ok()) error_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    write_next(mark_written());
    start_next(lock);
  }

  void OnCancel() override {
    std::optional<Ticket> ticket;
    {
      std::lock_guard lock(mutex_);
      if (error_.ok()) error_ = grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      ticket = ticket_;
    }
    // Outside the lock: withdrawing may start the calls behind this one, on this thread.
    if (ticket && unsent_.withdraw(*ticket)) {
      std::unique_lock lock(mutex_);
      ticket_.reset();
      end_step(*this, lock);
    }
  }

  void OnDone() override {
    service_.record("ReconstructProgressive", error_);
    delete this;
  }

 private:
  template <typename Reactor>
  friend void end_step(Reactor& reactor, std::unique_lock<std::mutex>& lock);

  // Submits the next ranks while their bytes can be reserved and the call is under its limits
  // (the first that must wait runs when granted), then ends the step.
  void start_next(std::unique_lock<std::mutex>& lock) {
    while (may_start()) {
      const uint64_t bytes = kSerializedCopies * answer_bytes(*jobs_[next_]);
      auto reserved = unsent_.reserve(bytes, [this](Reservation granted_bytes) {
        granted(std::move(granted_bytes));
      });
      if (const auto* ticket = std::get_if<Ticket>(&reserved)) {
        ticket_ = *ticket;
        break;
      }
      submit(lock, std::move(std::get<Reservation>(reserved)));
    }
    end_step(*this, lock);
  }

  // On the thread that gave bytes back. `reservation` goes back on return if it is not used.
  void granted(Reservation reservation) {
    std::unique_lock lock(mutex_);
    ticket_.reset();
    if (error_.ok()) submit(lock, std::move(reservation));
    start_next(lock);
  }

  // Submits the next rank with its bytes. Unlocks around the submit (which may answer at once);
  // the call cannot finish meanwhile.
  void submit(std::unique_lock<std::mutex>& lock, Reservation reservation) {
    const uint64_t sequence = responses_.reserve();
    unwritten_bytes_ += reservation.bytes();
    reservations_.push_back(std::move(reservation));
    JobPtr job = std::move(jobs_[next_++]);
    job->on_done = [this, sequence](Job& done, std::exception_ptr error) {
      deliver(sequence, done, error);
    };
    ++submitting_;
    lock.unlock();
    service_.context().pipeline.submit(std::move(job));
    lock.lock();
    --submitting_;
  }

  [[nodiscard]] bool may_start() const {
    return !finished_ && error_.ok() && !ticket_ && next_ < jobs_.size() &&
           responses_.unwritten() < kMaxUnwrittenPerCall &&
           unwritten_bytes_ < kMaxUnwrittenBytesPerCall;
  }

  void deliver(uint64_t sequence, Job& done, std::exception_ptr error) {
    grpc::ByteBuffer bytes;
    if (!error) {
      v1::ReconstructResponse response;
      fill_reconstruction(done, &response);
      bool own_buffer = false;
      const grpc::Status serialized =
          grpc::SerializationTraits<v1::ReconstructResponse>::Serialize(response, &bytes,
                                                                        &own_buffer);
      if (!serialized.ok()) error = std::make_exception_ptr(InternalError("answer not encoded"));
    }
    std::unique_lock lock(mutex_);
    if (error && error_.ok()) error_ = to_status(error);
    write_next(responses_.deliver(sequence, std::move(bytes)));
    end_step(*this, lock);
  }

  grpc::ByteBuffer* mark_written() {
    unwritten_bytes_ -= reservations_.front().bytes();
    sent_.push_back(std::move(reservations_.front()));
    reservations_.pop_front();
    return responses_.written();
  }

  // After the first error nothing more is written; the stream ends with that error. The
  // caller holds mutex_ and ends the step.
  void write_next(grpc::ByteBuffer* next) {
    while (next != nullptr && !error_.ok()) next = mark_written();
    if (next != nullptr) StartWrite(next);
  }

  [[nodiscard]] bool should_finish() const {
    return !finished_ && submitting_ == 0 && !ticket_ && responses_.idle() &&
           (next_ == jobs_.size() || !error_.ok());
  }
  [[nodiscard]] grpc::Status final_status() const { return error_; }

  SvdService& service_;
  UnsentBytesBudget& unsent_;  // shared by all calls (thread-safe)
  std::mutex mutex_;
  std::vector<JobPtr> jobs_;                              // guarded by mutex_; from next_ on
  std::size_t next_ = 0;                                  // guarded by mutex_
  OrderedResponses<grpc::ByteBuffer> responses_;          // guarded by mutex_
  std::deque<Reservation> reservations_;                  // guarded by mutex_; per unwritten
  uint64_t unwritten_bytes_ = 0;                          // guarded by mutex_
  std::vector<Reservation> sent_;                         // guarded by mutex_
  std::optional<Ticket> ticket_;                          // guarded by mutex_; in line
  int submitting_ = 0;                                    // guarded by mutex_
  grpc::Status error_;                                    // guarded by mutex_
  bool finished_ = false;                                 // guarded by mutex_
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SvdService::ReconstructStream(
    grpc::CallbackServerContext* ctx) {
  return new ReconstructStreamReactor(*this, ctx);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* SvdService::ReconstructProgressive(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) {
  return new ReconstructProgressiveReactor(*this, ctx, *request);
}

}  // namespace svdserve
