#pragma once
// How every unary RPC ends, in one place: exceptions stop here and become the call's status
// (status_mapping.hpp), the call is counted by method and code, a failure is logged, then
// Finish. A handler validates, then answers at once or hands its work on (never blocking the
// callback thread); the completion finishes through the same UnaryCall.

#include <grpcpp/grpcpp.h>

#include <exception>
#include <utility>

#include "server/grpc/call_metrics.hpp"
#include "server/grpc/status_mapping.hpp"

namespace svdserve {

// One unary call's end. Copyable (two pointers and a name), so a job's completion captures it.
class UnaryCall {
 public:
  UnaryCall(grpc::ServerUnaryReactor* reactor, const char* method, CallMetrics& metrics) noexcept
      : reactor_(reactor), method_(method), metrics_(&metrics) {}

  // Ends the call with `status`. Nothing of the call may be touched after this.
  void finish(const grpc::Status& status) const;

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
};

// Runs a unary handler: `start(call)` answers (call.finish) or hands the work on as its last
// step; whatever it throws finishes the call with that error's status.
template <typename Start>
grpc::ServerUnaryReactor* run_unary(grpc::CallbackServerContext* ctx, const char* method,
                                    CallMetrics& metrics, Start&& start) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  const UnaryCall call(reactor, method, metrics);
  try {
    std::forward<Start>(start)(call);
  } catch (...) {
    call.finish(to_status(std::current_exception()));
  }
  return reactor;
}

// A handler that answers on the callback thread: `respond()` fills the response, then the call
// ends OK (or with what it threw).
template <typename Respond>
grpc::ServerUnaryReactor* answer_unary(grpc::CallbackServerContext* ctx, const char* method,
                                       CallMetrics& metrics, Respond&& respond) {
  return run_unary(ctx, method, metrics, [&respond](const UnaryCall& call) {
    call.finish(nullptr, std::forward<Respond>(respond));
  });
}

}  // namespace svdserve
