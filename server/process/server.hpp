#pragma once
// Owns everything a running svdserve is made of, and starts and stops it in a fixed order:
// start:    backend -> store -> metrics sink -> pipeline -> stream and unsent-bytes budgets
//           -> /metrics endpoint -> token file and authorizer
//           -> gRPC server (health NOT_SERVING) -> SERVING
// shutdown: health NOT_SERVING, calls still answered (lame_duck_ms) -> refuse new calls, end
//           open streams and health watches -> drain in-flight RPCs, cancel what is left at
//           drain_timeout_ms after the start of the shutdown -> stop the pipeline -> destroy in
//           reverse order of creation.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kernels/backend.hpp"
#include "server/auth/token_file_watch.hpp"
#include "server/grpc/authorizer.hpp"
#include "server/grpc/health_service.hpp"
#include "server/grpc/service.hpp"
#include "server/grpc/stream_budget.hpp"
#include "server/grpc/unsent_bytes_budget.hpp"
#include "server/process/metrics_http.hpp"
#include "server/process/metrics_sink.hpp"
#include "server/runtime/factor_store.hpp"
#include "server/runtime/pipeline.hpp"
#include "svdserve/v1/config.pb.h"

namespace svdserve {

class Server {
 public:
  // config must be complete (apply_defaults) and valid. Throws on a backend or port failure.
  explicit Server(v1::ServerConfig config);
  ~Server();  // shutdown()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port actually bound (useful with port 0).
  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] const v1::ServerConfig& config() const noexcept { return config_; }
  // Recycled response memory (tests and the shutdown log).
  [[nodiscard]] HostBufferPoolStats host_buffer_stats() const {
    return pipeline_->host_buffer_stats();
  }
  // What all ReconstructStream calls have computing now, against their shared limit.
  [[nodiscard]] const StreamBudget& stream_budget() const { return *stream_budget_; }
  // Response bytes not yet sent, of all calls, against the server-wide budget.
  [[nodiscard]] const UnsentBytesBudget& unsent_bytes() const { return *unsent_bytes_; }
  // The /metrics port, 0 when metrics are off.
  [[nodiscard]] int metrics_port() const { return metrics_http_ ? metrics_http_->port() : 0; }

  // Decomposes every image of a server-side folder through the service, as LoadDirectory would.
  // Blocks until done; returns the number of images loaded.
  uint32_t load_directory(const std::string& path);

  // Marks the server SERVING in grpc.health.v1; once a shutdown has begun it stays NOT_SERVING.
  void set_serving(bool serving);
  // Called once every device of the backend has failed (a lost CUDA context can take the whole
  // process's with it): health is NOT_SERVING by then, and only a new process computes again.
  void on_devices_lost(std::function<void()> handler);
  [[nodiscard]] bool devices_lost() const;
  // Whether a shutdown has begun.
  [[nodiscard]] bool stopping() const;

  // Stops in the order above, on a thread of its own, and waits for it until drain_timeout_ms
  // and a margin have passed since the first call. False: work is still running (a computation
  // cannot be interrupted) and the process should exit without it. Idempotent; safe to call
  // from any thread but a gRPC callback.
  [[nodiscard]] bool shutdown_within_drain_timeout();
  // The same, but waits until everything has stopped, however long that takes.
  void shutdown();

 private:
  v1::ServerConfig config_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<FactorStore> store_;
  std::unique_ptr<FactorCache> cache_;  // before the pipeline: its completions persist through it
  std::unique_ptr<MetricsSink> metrics_;  // before the pipeline and the service: they record
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<StreamBudget> stream_budget_;  // before the endpoint and the service: they read it
  std::unique_ptr<UnsentBytesBudget> unsent_bytes_;  // the same
  std::unique_ptr<MetricsHttpEndpoint> metrics_http_;
  std::unique_ptr<TokenFileWatch> tokens_;  // null without token_file; before the authorizer
  std::unique_ptr<Authorizer> authorizer_;  // before the service: every call asks it
  std::unique_ptr<SvdService> service_;
  std::unique_ptr<HealthService> health_;  // before the gRPC server: its calls use it
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;

  void start_stopping();
  void stop_in_order() noexcept;  // on stopper_
  mutable std::mutex serving_mutex_;  // orders set_serving(true) against the start of a shutdown
  bool devices_lost_ = false;  // guarded by serving_mutex_; every device failed: never SERVING
  std::function<void()> on_devices_lost_;  // guarded by serving_mutex_
  bool stopping_ = false;             // guarded by serving_mutex_
  std::once_flag stop_once_;
  std::chrono::steady_clock::time_point stop_started_;  // set once, in stop_once_
  std::shared_future<void> stopped_;                     // set once, in stop_once_
  std::jthread stopper_;  // last: joined before anything it stops is destroyed
};

}  // namespace svdserve
