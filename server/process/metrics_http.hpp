#pragma once
// A minimal HTTP/1.0 endpoint that answers GET /metrics with a body made on demand.
//
// Why not prometheus-cpp's Exposer: it runs on civetweb, whose threads use a fixed 100 KiB
// stack; libcusolver's static TLS is larger than that, so in any process that links cuSOLVER
// civetweb's pthread_create fails (EINVAL) and the Exposer cannot start. prometheus-cpp still
// keeps and serialises the metrics; this only moves bytes.
//
// A few connection threads answer at once, and each connection has a deadline for its whole
// request head: a client that sends slowly (or not at all) holds one thread for at most that long
// and never delays the scrapes of others by more.

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "server/runtime/bounded_queue.hpp"

namespace svdserve {

class MetricsHttpEndpoint {
 public:
  // Binds host:port: host an IP address ("127.0.0.1", "0.0.0.0", "::"), port 0 any free port.
  // Throws Unavailable when it cannot.
  MetricsHttpEndpoint(const std::string& host, int port,
                      std::function<std::string()> render_metrics);
  ~MetricsHttpEndpoint();  // stops accepting, ends open connections at once, joins
  MetricsHttpEndpoint(const MetricsHttpEndpoint&) = delete;
  MetricsHttpEndpoint& operator=(const MetricsHttpEndpoint&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  void accept_connections();
  void serve_connections();
  void answer(int connection) const;

  std::function<std::string()> render_metrics_;
  int listener_ = -1;
  int wake_pipe_[2] = {-1, -1};  // written once by the destructor: every thread's poll wakes
  int port_ = 0;
  BoundedQueue<int> accepted_;   // connections waiting for a connection thread
  std::vector<std::jthread> connection_threads_;
  std::jthread accept_thread_;
};

}  // namespace svdserve
