#pragma once
// Safe exposure by default: the start-up log warns about every listener that other hosts can
// reach with nothing guarding it, so that an open port is a visible choice, never an accident.

#include <string>
#include <string_view>
#include <vector>

#include "svdserve/v1/config.pb.h"

namespace svdserve {

// What guards the gRPC listener against callers it does not know.
struct ListenerGuards {
  bool tls = false;             // TLS, mutual or not
  bool authentication = false;  // callers prove who they are beyond TLS
};

// Whether only this host can connect: 127.0.0.0/8, ::1 (IPv4-mapped too), "localhost", or a
// Unix socket. Anything else, a host name included, counts as reachable from elsewhere.
[[nodiscard]] bool is_loopback_host(std::string_view host) noexcept;
[[nodiscard]] bool is_loopback_listener(std::string_view listen_address);

// One line per exposed listener: gRPC beyond loopback with neither TLS nor authentication, or
// with tokens but no TLS (they cross the network readable), and /metrics (plain HTTP) when it is
// on and binds beyond loopback.
[[nodiscard]] std::vector<std::string> exposure_warnings(const v1::ServerConfig& config,
                                                         const ListenerGuards& grpc_guards);

}  // namespace svdserve
