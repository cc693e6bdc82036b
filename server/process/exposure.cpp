#include "server/process/exposure.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "server/process/listen_address.hpp"

namespace svdserve {
namespace {

constexpr unsigned char kIpv4LoopbackFirstOctet = 127;

}  // namespace

bool is_loopback_host(std::string_view host) noexcept {
  if (host == "localhost") return true;
  char text[INET6_ADDRSTRLEN + 1] = {};
  if (host.size() >= sizeof(text)) return false;
  host.copy(text, host.size());
  in_addr v4{};
  if (inet_pton(AF_INET, text, &v4) == 1) {
    return reinterpret_cast<const unsigned char*>(&v4.s_addr)[0] == kIpv4LoopbackFirstOctet;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text, &v6) != 1) return false;
  return IN6_IS_ADDR_LOOPBACK(&v6) ||
         (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == kIpv4LoopbackFirstOctet);
}

bool is_loopback_listener(std::string_view listen_address) {
  return is_unix_socket(listen_address) || is_loopback_host(listen_host(listen_address));
}

std::vector<std::string> exposure_warnings(const v1::ServerConfig& config,
                                           const ListenerGuards& grpc_guards) {
  std::vector<std::string> warnings;
  if (!is_loopback_listener(config.listen_address()) && !grpc_guards.tls &&
      !grpc_guards.authentication) {
    warnings.push_back(
        "exposed listener address=" + config.listen_address() +
        " accepts other hosts in plaintext without TLS or authentication: anyone who can reach "
        "it can call every RPC (set tls_cert_file and tls_key_file, or a token_file, or listen "
        "on 127.0.0.1)");
  }
  if (!is_loopback_listener(config.listen_address()) && !grpc_guards.tls &&
      grpc_guards.authentication) {
    warnings.push_back("exposed listener address=" + config.listen_address() +
                       " takes bearer tokens in plaintext: anyone on the network path can read "
                       "and replay them (set tls_cert_file and tls_key_file, or listen on "
                       "127.0.0.1 behind a proxy that adds TLS)");
  }
  if (config.metrics_port() != 0 && !is_loopback_host(config.metrics_host())) {
    warnings.push_back("exposed metrics endpoint host=" + config.metrics_host() +
                       " port=" + std::to_string(config.metrics_port()) +
                       " is plain HTTP for other hosts (keep metrics_host 127.0.0.1, or put it "
                       "behind a proxy that adds TLS)");
  }
  return warnings;
}

}  // namespace svdserve
