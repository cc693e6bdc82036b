#include "server/process/server_credentials.hpp"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

namespace svdserve {

bool tls_enabled(const v1::ServerConfig& config) noexcept {
  return !config.tls_cert_file().empty() && !config.tls_key_file().empty();
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const v1::ServerConfig& config) {
  if (!tls_enabled(config)) return grpc::InsecureServerCredentials();
  constexpr unsigned kMillisecondsPerSecond = 1000;
  const unsigned reload_interval_s = config.tls_reload_interval_ms() / kMillisecondsPerSecond;
  const bool mutual = !config.tls_client_ca_file().empty();
  // The provider's thread re-reads the files; gRPC keeps the provider alive with the credentials.
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      config.tls_key_file(), config.tls_cert_file(), config.tls_client_ca_file(),
      reload_interval_s);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mutual) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace svdserve
