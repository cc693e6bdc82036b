#include "server/grpc/unary_call.hpp"

#include "server/runtime/logger.hpp"

namespace svdserve {

void UnaryCall::finish(grpc::Status status) const {
  if (status.ok() && messages_) status = messages_->serialize_response();
  metrics_->record_call(method_, status.error_code());
  if (!status.ok()) {
    log().debug("call failed method={} code={} message=\"{}\"", method_,
                code_name(status.error_code()), status.error_message());
  }
  reactor_->Finish(status);
}

void BudgetedUnaryReactor::run(const UnaryCall& call, const std::function<void()>& start) noexcept {
  try {
    start();
  } catch (...) {
    call.finish(to_status(std::current_exception()));
  }
}

void BudgetedUnaryReactor::start_after_reserving(uint64_t bytes, const UnaryCall& call,
                                                 std::function<void()> start) {
  std::unique_lock lock(mutex_);
  call_ = call;
  auto reserved = budget_.reserve(bytes, [this, call, start](UnsentBytesBudget::Reservation r) {
    {
      std::lock_guard granted_lock(mutex_);
      ticket_.reset();
      reservation_ = std::move(r);
    }
    run(call, start);
  });
  if (const auto* ticket = std::get_if<UnsentBytesBudget::Ticket>(&reserved)) {
    ticket_ = *ticket;
    return;
  }
  reservation_ = std::move(std::get<UnsentBytesBudget::Reservation>(reserved));
  lock.unlock();
  run(call, start);
}

void BudgetedUnaryReactor::OnCancel() {
  std::optional<UnsentBytesBudget::Ticket> ticket;
  std::optional<UnaryCall> call;
  {
    std::lock_guard lock(mutex_);
    ticket = ticket_;
    call = call_;
  }
  // Outside the lock: withdrawing may start the calls behind this one, on this thread.
  if (ticket && budget_.withdraw(*ticket)) {
    call->finish(grpc::Status(grpc::StatusCode::CANCELLED,
                              "cancelled while waiting for the server's response budget"));
  }
}

void BudgetedUnaryReactor::OnDone() {
  UnsentBytesBudget::Reservation sent;
  {
    std::lock_guard lock(mutex_);
    sent = std::move(reservation_);
  }
  delete this;
  // `sent` goes here, after the lock: the bytes come back and the calls in line may start.
}

}  // namespace svdserve
