#pragma once
// A minimal HTTP/1.0 endpoint that answers GET /metrics with a body made on demand.
//
// Why not prometheus-cpp's Exposer: it runs on civetweb, whose threads use a fixed 100 KiB
// stack; libcusolver's static TLS is larger than that, so in any process that links cuSOLVER
// civetweb's pthread_create fails (EINVAL) and the Exposer cannot start. prometheus-cpp still
// keeps and serialises the metrics; this only moves bytes.

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace svdserve {

class MetricsHttpEndpoint {
 public:
  // Binds 0.0.0.0:port (0: any free port). Throws Unavailable when it cannot.
  MetricsHttpEndpoint(int port, std::function<std::string()> render_metrics);
  ~MetricsHttpEndpoint();  // stops accepting and joins
  MetricsHttpEndpoint(const MetricsHttpEndpoint&) = delete;
  MetricsHttpEndpoint& operator=(const MetricsHttpEndpoint&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  void serve();
  void answer(int connection) const;

  std::function<std::string()> render_metrics_;
  int listener_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written by the destructor to end serve()
  int port_ = 0;
  std::thread thread_;
};

}  // namespace svdserve
