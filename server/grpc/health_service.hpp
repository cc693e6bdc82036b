#pragma once
// grpc.health.v1.Health, served in place of gRPC's default health service. The answers are the
// same; the difference is shutdown(): it ends every Watch call, which the default service keeps
// open until the server's Shutdown deadline cancels it, holding the whole drain for that long.

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"

namespace svdserve {

class HealthService final : public grpc::health::v1::Health::CallbackService {
 public:
  // Answers for "" (the whole server) and for each of `services`; any other name is unknown.
  // NOT_SERVING until set_serving(true).
  explicit HealthService(const std::vector<std::string>& services);

  // Every service's status, sent to every Watch. Ignored after shutdown().
  void set_serving(bool serving);
  // NOT_SERVING from now on; each Watch ends (UNAVAILABLE) once its last update is written.
  void shutdown();

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::health::v1::HealthCheckResponse* response) override;
  grpc::ServerWriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
      grpc::CallbackServerContext* ctx,
      const grpc::health::v1::HealthCheckRequest* request) override;

 private:
  class WatchReactor;
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  [[nodiscard]] ServingStatus status_of(const std::string& service) const;  // holds mutex_
  void forget(WatchReactor* watch);

  const std::set<std::string> services_;
  std::mutex mutex_;
  bool serving_ = false;              // guarded by mutex_
  bool shut_down_ = false;            // guarded by mutex_
  std::set<WatchReactor*> watches_;   // guarded by mutex_; each removes itself when done
};

}  // namespace svdserve
