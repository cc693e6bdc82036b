#pragma once
// The real svdserve binary on a loopback port, for tests that measure the server process itself:
// its memory (VmRSS, VmHWM from /proc/PID/status) and its /metrics, while clients in this
// process behave as a user's would, or as a hostile one's.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client.hpp"
#include "process.hpp"
#include "svdserve/v1/config.pb.h"

namespace svdserve::testing {

struct ProcessMemory {
  uint64_t rss_bytes = 0;       // VmRSS: resident now
  uint64_t peak_rss_bytes = 0;  // VmHWM: the most ever resident
};

[[nodiscard]] ProcessMemory memory_of(pid_t pid);

// A TCP socket connected to 127.0.0.1:port, or -1.
[[nodiscard]] int connect_loopback(int port);
// GET http://127.0.0.1:port/path, the whole HTTP answer; empty when nothing listens.
[[nodiscard]] std::string http_get(int port, const std::string& path);
// The value of the first sample line of Prometheus text matching `series` exactly (name plus
// labels), or -1.
[[nodiscard]] double metric_sample(const std::string& text, const std::string& series);

// Checks `reached` every few milliseconds until it holds or `timeout` passes; returns whether it
// held. For a state of another process, which cannot signal this one.
[[nodiscard]] bool eventually(const std::function<bool()>& reached,
                              std::chrono::milliseconds timeout);

// The real svdserve binary (CPU backend) on a free loopback port, SERVING once constructed
// (serving() says whether it got there), with a client whose calls wait up to 60 s.
class ServerProcess {
 public:
  // `args` are added to the command line after the listen address and the backend. A server
  // with TLS needs `client_tls` for its clients (the CA, and a client certificate for mutual TLS).
  explicit ServerProcess(const std::vector<std::string>& args = {},
                         std::optional<ClientTls> client_tls = std::nullopt);
  // `config` is written to a file for --config; the listen address and a metrics port are
  // chosen here.
  explicit ServerProcess(v1::ServerConfig config);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  [[nodiscard]] bool serving() const noexcept { return serving_; }
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int port() const noexcept { return port_; }
  // Only with a config; 0 otherwise.
  [[nodiscard]] int metrics_port() const noexcept { return metrics_port_; }
  [[nodiscard]] pid_t pid() const noexcept { return process_->pid(); }
  [[nodiscard]] Process& process() noexcept { return *process_; }
  [[nodiscard]] const Client& client() const noexcept { return *client_; }
  [[nodiscard]] ProcessMemory memory() const { return memory_of(pid()); }
  // Only with a config: the args constructor serves no /metrics.
  [[nodiscard]] std::string metrics() const { return http_get(metrics_port_, "/metrics"); }
  // A client on a connection of its own (a hostile client must not share a well-behaved one's).
  [[nodiscard]] std::unique_ptr<Client> new_client(
      std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;
  // SIGTERM, then the exit (a graceful drain), at most `limit`.
  ProcessResult stop(std::chrono::seconds limit = std::chrono::seconds(30));

 private:
  void start(const std::vector<std::string>& args);

  std::optional<ClientTls> client_tls_;
  std::string config_path_;  // empty: none written
  int port_ = 0;
  int metrics_port_ = 0;
  std::unique_ptr<Process> process_;
  std::unique_ptr<Client> client_;
  bool serving_ = false;
};

}  // namespace svdserve::testing
