#pragma once
// Certificates for TLS tests, made by the real `openssl` binary in a folder the caller owns:
// certificate authorities, server certificates for 127.0.0.1 and localhost, client certificates.
// EC P-256 keys (made in milliseconds), valid for two days.

#include <filesystem>
#include <string>

namespace svdserve::testing {

// A PEM certificate and its unencrypted PEM private key.
struct CertifiedKey {
  std::filesystem::path cert;
  std::filesystem::path key;
};

class TestCertificateAuthority {
 public:
  // Makes FOLDER/NAME-ca.crt and FOLDER/NAME-ca.key. Throws std::runtime_error (with openssl's
  // own output) when openssl fails or is missing.
  TestCertificateAuthority(std::filesystem::path folder, std::string name);

  [[nodiscard]] const std::filesystem::path& cert() const noexcept { return ca_.cert; }

  // FOLDER/NAME.crt and .key: a server certificate (SAN IP:127.0.0.1, DNS:localhost) or a
  // client certificate (CN=NAME), signed by this CA.
  [[nodiscard]] CertifiedKey issue_server(const std::string& name) const;
  [[nodiscard]] CertifiedKey issue_client(const std::string& name) const;

 private:
  [[nodiscard]] CertifiedKey issue(const std::string& name, const char* extensions) const;

  std::filesystem::path folder_;
  std::filesystem::path openssl_config_;
  CertifiedKey ca_;
};

}  // namespace svdserve::testing
