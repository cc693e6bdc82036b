#include "client/channel_credentials.hpp"

#include <stdexcept>

#include "client/image_files.hpp"

namespace svdserve {

std::shared_ptr<grpc::ChannelCredentials> tls_channel_credentials(const ClientTls& tls) {
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    throw std::runtime_error("a client certificate needs both its certificate and its key file");
  }
  grpc::SslCredentialsOptions options;
  // Empty roots: gRPC uses the system's ($GRPC_DEFAULT_SSL_ROOTS_FILE_PATH overrides them).
  if (!tls.ca_file.empty()) options.pem_root_certs = read_file_bytes(tls.ca_file);
  if (!tls.cert_file.empty()) {
    options.pem_cert_chain = read_file_bytes(tls.cert_file);
    options.pem_private_key = read_file_bytes(tls.key_file);
  }
  return grpc::SslCredentials(options);
}

}  // namespace svdserve
