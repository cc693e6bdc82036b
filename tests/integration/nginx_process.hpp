#pragma once
// Debian's nginx in front of svdserve replicas, run by the test user in a temp folder, with the
// shipped deploy/nginx/svdserve.conf: the test substitutes only its ports (the listener and the
// example upstream servers), so what users copy is what the test runs.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve::testing {

inline constexpr const char* kNginxBinary = "/usr/sbin/nginx";

[[nodiscard]] bool nginx_installed();

// The shipped server block with `listen PORT` on listen_port (loopback only) and the upstream's
// example servers replaced, in order, by `upstreams`. Throws std::runtime_error when the file
// has not as many example servers as upstreams, or no listener.
[[nodiscard]] std::string nginx_site_for(const std::string& shipped, int listen_port,
                                         const std::vector<std::string>& upstreams);

class NginxProcess {
 public:
  // Starts nginx; ready() says whether it answered a health check through to a replica.
  explicit NginxProcess(const std::vector<std::string>& upstreams);
  ~NginxProcess();  // SIGTERM (nginx stops its workers), then the exit
  NginxProcess(const NginxProcess&) = delete;
  NginxProcess& operator=(const NginxProcess&) = delete;

  [[nodiscard]] bool ready() const noexcept { return ready_; }
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // What nginx logged so far (errors, upstream failures): for a failing test's message.
  [[nodiscard]] std::string log() const;

 private:
  TempFolder folder_{"svdserve_nginx"};
  int port_ = 0;
  std::unique_ptr<Process> process_;
  bool ready_ = false;
};

}  // namespace svdserve::testing
