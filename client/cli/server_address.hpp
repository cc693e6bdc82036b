#pragma once
// What --server and $SVDSERVE_SERVER name, made into a gRPC target.

#include <string>

namespace svdserve::cli {

// A host without a port means the server's default one: "gpu-box" -> "gpu-box:50051",
// "[::1]" -> "[::1]:50051". Addresses with a port, bare IPv6 addresses and gRPC target URIs
// ("unix:/run/s.sock", "dns:///host:1") stay as they are.
[[nodiscard]] inline std::string with_default_port(std::string server) {
  const bool bracketed_ipv6 = server.starts_with('[') && server.ends_with(']');
  if (bracketed_ipv6 || server.find(':') == std::string::npos) server += ":50051";
  return server;
}

}  // namespace svdserve::cli
