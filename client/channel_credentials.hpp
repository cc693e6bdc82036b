#pragma once
// How a Client's channel is secured: plaintext, TLS, or TLS with a client certificate.

#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

namespace svdserve {

// TLS for a channel. Files are PEM, read once when the channel is made.
struct ClientTls {
  std::string ca_file{};    // roots that may sign the server's certificate; empty: the system's
  std::string cert_file{};  // with key_file: this client's certificate, for mutual TLS
  std::string key_file{};
};

// TLS credentials from the files. Throws std::runtime_error naming a file that cannot be read,
// or when only one of cert_file and key_file is given.
[[nodiscard]] std::shared_ptr<grpc::ChannelCredentials> tls_channel_credentials(
    const ClientTls& tls);

}  // namespace svdserve
