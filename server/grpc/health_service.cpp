#include "server/grpc/health_service.hpp"

#include <optional>
#include <utility>

namespace svdserve {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// One Watch call: the current status first, then every change, one write at a time (a change
// that comes during a write is sent after it; only the latest counts).
class HealthService::WatchReactor final : public grpc::ServerWriteReactor<HealthCheckResponse> {
 public:
  WatchReactor(HealthService& service, std::string name)
      : service_(service), name_(std::move(name)) {}

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  // The service's mutex is held by the callers of send() and end(): OnDone cannot delete this
  // meanwhile, as it removes itself from the service first.
  void send(ServingStatus status) {
    std::lock_guard lock(mutex_);
    if (end_requested_) return;
    if (writing_) {
      pending_ = status;
      return;
    }
    start_write(status);
  }

  void end(const grpc::Status& status) {
    std::lock_guard lock(mutex_);
    if (end_requested_) return;
    end_requested_ = true;
    final_status_ = status;
    if (!writing_) finish(final_status_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mutex_);
    writing_ = false;
    if (!ok) {
      finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
    } else if (pending_) {
      start_write(*pending_);
      pending_.reset();
    } else if (end_requested_) {
      finish(final_status_);
    }
  }

  void OnCancel() override {
    std::lock_guard lock(mutex_);
    end_requested_ = true;
    finish(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
  }

  void OnDone() override {
    service_.forget(this);
    delete this;
  }

 private:
  void start_write(ServingStatus status) {  // holds mutex_
    response_.set_status(status);
    writing_ = true;
    StartWrite(&response_);
  }

  void finish(const grpc::Status& status) {  // holds mutex_
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  HealthService& service_;
  const std::string name_;
  std::mutex mutex_;
  HealthCheckResponse response_;               // guarded by mutex_; being written while writing_
  std::optional<ServingStatus> pending_;       // guarded by mutex_
  grpc::Status final_status_;                  // guarded by mutex_
  bool writing_ = false;                       // guarded by mutex_
  bool end_requested_ = false;                 // guarded by mutex_
  bool finished_ = false;                      // guarded by mutex_
};

HealthService::HealthService(const std::vector<std::string>& services)
    : services_(services.begin(), services.end()) {}

void HealthService::set_serving(bool serving) {
  std::lock_guard lock(mutex_);
  if (shut_down_ || serving_ == serving) return;
  serving_ = serving;
  for (WatchReactor* watch : watches_) watch->send(status_of(watch->name()));
}

void HealthService::shutdown() {
  std::lock_guard lock(mutex_);
  if (shut_down_) return;
  shut_down_ = true;
  const bool was_serving = std::exchange(serving_, false);
  const grpc::Status ending(grpc::StatusCode::UNAVAILABLE,
                            "server is shutting down; watch another instance");
  for (WatchReactor* watch : watches_) {
    if (was_serving) watch->send(status_of(watch->name()));
    watch->end(ending);
  }
}

HealthService::ServingStatus HealthService::status_of(const std::string& service) const {
  if (!service.empty() && !services_.contains(service)) return HealthCheckResponse::SERVICE_UNKNOWN;
  return serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

void HealthService::forget(WatchReactor* watch) {
  std::lock_guard lock(mutex_);
  watches_.erase(watch);
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* ctx,
                                               const HealthCheckRequest* request,
                                               HealthCheckResponse* response) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  ServingStatus status = HealthCheckResponse::UNKNOWN;
  {
    std::lock_guard lock(mutex_);
    status = status_of(request->service());
  }
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                 "unknown service '" + request->service() + "'"));
  } else {
    response->set_status(status);
    reactor->Finish(grpc::Status::OK);
  }
  return reactor;
}

grpc::ServerWriteReactor<HealthCheckResponse>* HealthService::Watch(
    grpc::CallbackServerContext* /*ctx*/, const HealthCheckRequest* request) {
  auto* watch = new WatchReactor(*this, request->service());
  std::lock_guard lock(mutex_);
  watch->send(status_of(watch->name()));
  if (shut_down_) {
    watch->end(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
  } else {
    watches_.insert(watch);
  }
  return watch;
}

}  // namespace svdserve
