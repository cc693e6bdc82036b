#pragma once
// The gRPC listen address ("host:port", "[v6]:port"): its port checked before the server starts,
// and the reason in words when gRPC could not listen there (gRPC itself only says it failed).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace svdserve {

// Whether gRPC treats the address as a Unix socket ("unix:PATH", "unix-abstract:NAME"): no port.
[[nodiscard]] bool is_unix_socket(std::string_view address) noexcept;

// The text after the last ':' (the port of "host:port"); nullopt when there is no ':'.
[[nodiscard]] std::optional<std::string_view> port_text(std::string_view address) noexcept;

// The host of a host:port address, without the brackets of an IPv6 literal ("[::1]:80" -> "::1");
// empty for ":80" (every interface).
[[nodiscard]] std::string listen_host(std::string_view address);

// The port of a host:port address when it is a number in 0..65535 (0: any free port).
[[nodiscard]] std::optional<uint16_t> listen_port(std::string_view address) noexcept;

// Why listening on `address` failed, found by binding it once more: "address H:P is already in
// use ..." or the system's reason.
[[nodiscard]] std::string explain_listen_failure(const std::string& address);

}  // namespace svdserve
