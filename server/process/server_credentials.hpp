#pragma once
// The gRPC listener's credentials from the config: plaintext, TLS, or mutual TLS.

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "svdserve/v1/config.pb.h"

namespace svdserve {

// Whether the config asks for TLS (tls_cert_file and tls_key_file set; validate() checked them).
[[nodiscard]] bool tls_enabled(const v1::ServerConfig& config) noexcept;

// TLS through gRPC's file watcher when tls_enabled: the certificate, key and client CA are read
// again every tls_reload_interval_ms, so replaced files serve new connections without a restart.
// With tls_client_ca_file, every client must present a certificate that CA signed. Otherwise
// plaintext.
[[nodiscard]] std::shared_ptr<grpc::ServerCredentials> server_credentials(
    const v1::ServerConfig& config);

}  // namespace svdserve
