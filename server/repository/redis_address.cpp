#include "server/repository/redis_address.hpp"

#include <charconv>

namespace svdserve {

std::optional<RedisEndpoint> parse_redis_address(std::string_view address) {
  constexpr std::string_view kUnixScheme = "unix:";
  RedisEndpoint endpoint;
  if (address.starts_with(kUnixScheme)) {
    const std::string_view path = address.substr(kUnixScheme.size());
    if (path.empty() || path.front() != '/') return std::nullopt;
    endpoint.unix_path = path;
    return endpoint;
  }
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  // "::1:6379" is ambiguous: an IPv6 host needs its brackets.
  if (host.empty() || (!bracketed && host.find(':') != std::string_view::npos)) return std::nullopt;
  constexpr int kMaxPort = 65535;
  int number = 0;
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (error != std::errc() || end != port.data() + port.size() || number < 1 || number > kMaxPort) {
    return std::nullopt;
  }
  endpoint.host = host;
  endpoint.port = number;
  return endpoint;
}

}  // namespace svdserve
