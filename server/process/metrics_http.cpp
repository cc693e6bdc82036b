#include "server/process/metrics_http.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "kernels/errors.hpp"
#include "kernels/trace.hpp"

namespace svdserve {
namespace {

constexpr int kBacklog = 16;
// Connections answered at once; a slow client holds one for at most kRequestHeadTimeout.
constexpr int kConnectionThreads = 4;
// Accepted connections waiting for a thread; past that a new one is closed at once (the scraper
// tries again at its next interval).
constexpr std::size_t kWaitingConnections = 16;
// For the whole request head, however it trickles in: Prometheus sends it at once.
constexpr std::chrono::milliseconds kRequestHeadTimeout(2000);
// For each send of the answer to a client that does not read it.
constexpr timeval kSendTimeout{2, 0};
constexpr std::size_t kMaxRequestBytes = 8192;

void write_all(int fd, const std::string& data) {
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the scraper went away, or stopped reading past kSendTimeout
    sent += static_cast<std::size_t>(n);
  }
}

std::string response(const char* status, const char* content_type, const std::string& body) {
  return std::string("HTTP/1.0 ") + status + "\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

// A listening socket on host:port, or -1 with errno set.
int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    errno = EINVAL;
    return -1;
  }
  const int fd = socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    const int reuse = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, kBacklog) != 0) {
      const int error = errno;
      close(fd);
      freeaddrinfo(found);
      errno = error;
      return -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return address.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port)
             : ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

}  // namespace

MetricsHttpEndpoint::MetricsHttpEndpoint(const std::string& host, int port,
                                         std::function<std::string()> render_metrics)
    : render_metrics_(std::move(render_metrics)), accepted_(kWaitingConnections) {
  listener_ = listen_on(host, port);
  if (listener_ < 0 || pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    const std::string reason = std::strerror(errno);
    if (listener_ >= 0) close(listener_);
    throw Unavailable("cannot serve /metrics on " + host + ":" + std::to_string(port) + ": " +
                      reason);
  }
  port_ = bound_port(listener_);
  for (int i = 0; i < kConnectionThreads; ++i) {
    connection_threads_.emplace_back([this] { serve_connections(); });
  }
  accept_thread_ = std::jthread([this] { accept_connections(); });
}

MetricsHttpEndpoint::~MetricsHttpEndpoint() {
  (void)!write(wake_pipe_[1], "x", 1);
  accept_thread_.join();
  accepted_.close();  // the connection threads close what is still queued, then end
  connection_threads_.clear();  // joins
  close(listener_);
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
}

void MetricsHttpEndpoint::accept_connections() {
  trace::name_current_thread("svd-metrics");
  for (;;) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    if (accepted_.try_push(connection) != PushResult::ok) close(connection);
  }
}

void MetricsHttpEndpoint::serve_connections() {
  trace::name_current_thread("svd-scrape");
  while (std::optional<int> connection = accepted_.pop()) {
    answer(*connection);
    close(*connection);
  }
}

void MetricsHttpEndpoint::answer(int connection) const {
  const auto deadline = std::chrono::steady_clock::now() + kRequestHeadTimeout;
  std::string request;
  char buffer[1024];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;  // the head did not arrive in time: drop the connection
    pollfd fds[2] = {{connection, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents != 0) return;
    const ssize_t n = recv(connection, buffer, sizeof(buffer), 0);
    if (n <= 0) return;
    request.append(buffer, static_cast<std::size_t>(n));
  }
  setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &kSendTimeout, sizeof(kSendTimeout));
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
