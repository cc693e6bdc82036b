#include "server/process/metrics_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernels/errors.hpp"
#include "kernels/trace.hpp"

namespace svdserve {
namespace {

constexpr int kBacklog = 16;
constexpr int kReadTimeoutMs = 2000;  // a scraper that sends nothing is dropped
constexpr std::size_t kMaxRequestBytes = 8192;

void write_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the scraper went away
    sent += static_cast<std::size_t>(n);
  }
}

std::string response(const char* status, const char* content_type, const std::string& body) {
  return std::string("HTTP/1.0 ") + status + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

}  // namespace

MetricsHttpEndpoint::MetricsHttpEndpoint(int port, std::function<std::string()> render_metrics)
    : render_metrics_(std::move(render_metrics)) {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int reuse = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listener_, kBacklog) != 0 || pipe(wake_pipe_) != 0) {
    const std::string reason = std::strerror(errno);
    if (listener_ >= 0) close(listener_);
    throw Unavailable("cannot serve /metrics on port " + std::to_string(port) + ": " + reason);
  }
  socklen_t length = sizeof(address);
  getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

MetricsHttpEndpoint::~MetricsHttpEndpoint() {
  (void)!write(wake_pipe_[1], "x", 1);
  thread_.join();
  close(listener_);
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
}

void MetricsHttpEndpoint::serve() {
  trace::name_current_thread("svd-metrics");
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    answer(connection);
    close(connection);
  }
}

void MetricsHttpEndpoint::answer(int connection) const {
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    pollfd fd{connection, POLLIN, 0};
    if (poll(&fd, 1, kReadTimeoutMs) <= 0) return;
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  const bool wants_metrics =
      request.rfind("GET /metrics ", 0) == 0 || request.rfind("GET /metrics?", 0) == 0;
  if (!wants_metrics) {
    write_all(connection, response("404 Not Found", "text/plain", "only GET /metrics is served\n"));
    return;
  }
  write_all(connection, response("200 OK", "text/plain; version=0.0.4; charset=utf-8",
                                 render_metrics_()));
}

}  // namespace svdserve
