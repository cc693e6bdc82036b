#pragma once
// How every unary RPC ends, in one place: exceptions stop here and become the call's status
// (status_mapping.hpp), the call is counted by method and code, a failure is logged, then
// Finish. A handler validates, then answers at once or hands its work on (never blocking the
// callback thread); the completion finishes through the same UnaryCall.

#include <grpcpp/grpcpp.h>

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "server/grpc/call_metrics.hpp"
#include "server/grpc/parsed_call.hpp"
#include "server/grpc/status_mapping.hpp"
#include "server/grpc/unsent_bytes_budget.hpp"

namespace svdserve {

// One unary call's end. Copyable (pointers and a name), so a job's completion captures it.
// A typed call's request and response (parsed_call.hpp) live as long as its copies.
class UnaryCall {
 public:
  UnaryCall(grpc::ServerUnaryReactor* reactor, const char* method, CallMetrics& metrics,
            std::shared_ptr<ResponseSerializer> messages = nullptr) noexcept
      : reactor_(reactor), method_(method), metrics_(&metrics), messages_(std::move(messages)) {}

  // Ends the call with `status` (an OK typed call with its response serialized). Nothing of the
  // call may be touched after this.
  void finish(grpc::Status status) const;

  // Ends the call with the error's status or, without one, once `respond` has filled the
  // response; what `respond` throws becomes the status instead.
  template <typename Respond>
  void finish(std::exception_ptr error, Respond&& respond) const {
    if (!error) {
      try {
        std::forward<Respond>(respond)();
      } catch (...) {
        error = std::current_exception();
      }
    }
    finish(to_status(error));
  }

 private:
  grpc::ServerUnaryReactor* reactor_;
  const char* method_;
  CallMetrics* metrics_;
  std::shared_ptr<ResponseSerializer> messages_;  // null for a raw call
};

// A unary call whose response counts against the unsent-bytes budget, from before its work
// starts until gRPC has sent the response (OnDone). Until its bytes are reserved it waits in the
// budget's line with its request alone; cancelled there, it leaves the line and ends CANCELLED.
class BudgetedUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit BudgetedUnaryReactor(UnsentBytesBudget& budget) noexcept : budget_(budget) {}

  // Runs `start` once `bytes` are reserved: now, or later on the thread that gave bytes back.
  // What `start` throws finishes `call` with that error. Once per call.
  void start_after_reserving(uint64_t bytes, const UnaryCall& call, std::function<void()> start);

  void OnCancel() override;
  void OnDone() override;

 private:
  static void run(const UnaryCall& call, const std::function<void()>& start) noexcept;

  UnsentBytesBudget& budget_;
  std::mutex mutex_;
  std::optional<UnaryCall> call_;                     // guarded by mutex_
  std::optional<UnsentBytesBudget::Ticket> ticket_;   // guarded by mutex_; set while in line
  UnsentBytesBudget::Reservation reservation_;        // guarded by mutex_
};

// Runs a unary handler on `reactor`: `start(call)` answers (call.finish) or hands the work on as
// its last step; whatever it throws finishes the call with that error's status.
template <typename Start>
grpc::ServerUnaryReactor* run_unary(grpc::ServerUnaryReactor* reactor, const char* method,
                                    CallMetrics& metrics, Start&& start,
                                    std::shared_ptr<ResponseSerializer> messages = nullptr) {
  const UnaryCall call(reactor, method, metrics, std::move(messages));
  try {
    std::forward<Start>(start)(call);
  } catch (...) {
    call.finish(to_status(std::current_exception()));
  }
  return reactor;
}

// The same on the call's default reactor (a response that is not budgeted).
template <typename Start>
grpc::ServerUnaryReactor* run_unary(grpc::CallbackServerContext* ctx, const char* method,
                                    CallMetrics& metrics, Start&& start,
                                    std::shared_ptr<ResponseSerializer> messages = nullptr) {
  return run_unary(ctx->DefaultReactor(), method, metrics, std::forward<Start>(start),
                   std::move(messages));
}

// A handler that answers on the callback thread: `respond()` fills the response, then the call
// ends OK (or with what it threw).
template <typename Respond>
grpc::ServerUnaryReactor* answer_unary(grpc::CallbackServerContext* ctx, const char* method,
                                       CallMetrics& metrics, Respond&& respond,
                                       std::shared_ptr<ResponseSerializer> messages = nullptr) {
  return run_unary(
      ctx, method, metrics,
      [&respond](const UnaryCall& call) { call.finish(nullptr, std::forward<Respond>(respond)); },
      std::move(messages));
}

}  // namespace svdserve
