#include "server/process/listen_address.hpp"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

namespace svdserve {
namespace {

constexpr uint32_t kMaxPort = std::numeric_limits<uint16_t>::max();

}  // namespace

std::string listen_host(std::string_view address) {
  std::string_view host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::string(host);
}

bool is_unix_socket(std::string_view address) noexcept {
  return address.starts_with("unix:") || address.starts_with("unix-abstract:");
}

std::optional<std::string_view> port_text(std::string_view address) noexcept {
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return address.substr(colon + 1);
}

std::optional<uint16_t> listen_port(std::string_view address) noexcept {
  const std::optional<std::string_view> text = port_text(address);
  if (!text || text->empty()) return std::nullopt;
  uint32_t port = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), port);
  if (error != std::errc() || end != text->data() + text->size() || port > kMaxPort) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(port);
}

std::string explain_listen_failure(const std::string& address) {
  const std::string generic = "cannot listen on " + address;
  const std::optional<std::string_view> port = port_text(address);
  if (is_unix_socket(address) || !port) return generic;
  const std::string host = listen_host(address);  // getaddrinfo wants no brackets
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service(*port);
  if (const int error = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints,
                                    &found);
      error != 0) {
    return generic + ": " + gai_strerror(error);
  }
  int bind_error = 0;
  for (const addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    const int fd = socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int reuse = 1;  // as gRPC does, so that connections in TIME_WAIT do not count
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
    if (bind(fd, candidate->ai_addr, candidate->ai_addrlen) != 0 && bind_error == 0) {
      bind_error = errno;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (bind_error == EADDRINUSE) {
    return "address " + address +
           " is already in use (is another svdserve running? stop it or choose another --listen "
           "port)";
  }
  if (bind_error != 0) return generic + ": " + std::strerror(bind_error);
  return generic;
}

}  // namespace svdserve
