#include "tests/support/test_certificates.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <vector>

extern char** environ;

namespace svdserve::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kValidDays = "2";

// Our own openssl config, so that the system's openssl.cnf changes nothing. The CA signs; a
// server certificate names the loopback address and name that tests connect to.
constexpr const char* kOpensslConfig = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = svdserve-test
[ca_extensions]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_extensions]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
[client_extensions]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
)";

std::string slurp(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Runs openssl with args to completion; its output goes to FOLDER/openssl.log, quoted on failure.
void openssl(const fs::path& folder, const std::vector<std::string>& args) {
  const std::string log = (folder / "openssl.log").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> argv{const_cast<char*>("openssl")};
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, "openssl", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    throw std::runtime_error("cannot run openssl (install the openssl package): error " +
                             std::to_string(spawned));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string command = "openssl";
    for (const auto& arg : args) command += " " + arg;
    throw std::runtime_error(command + " failed:\n" + slurp(log));
  }
}

std::string random_serial() {
  std::random_device seed;
  return std::to_string((static_cast<uint64_t>(seed()) << 31) | seed());
}

}  // namespace

TestCertificateAuthority::TestCertificateAuthority(fs::path folder, std::string name)
    : folder_(std::move(folder)), openssl_config_(folder_ / "openssl.cnf") {
  std::ofstream(openssl_config_) << kOpensslConfig;
  ca_ = {folder_ / (name + "-ca.crt"), folder_ / (name + "-ca.key")};
  openssl(folder_, {"req", "-x509", "-config", openssl_config_.string(), "-extensions",
                    "ca_extensions", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", kValidDays, "-subj", "/CN=" + name + " test CA",
                    "-keyout", ca_.key.string(), "-out", ca_.cert.string()});
}

CertifiedKey TestCertificateAuthority::issue_server(const std::string& name) const {
  return issue(name, "server_extensions");
}

CertifiedKey TestCertificateAuthority::issue_client(const std::string& name) const {
  return issue(name, "client_extensions");
}

CertifiedKey TestCertificateAuthority::issue(const std::string& name,
                                             const char* extensions) const {
  const CertifiedKey issued{folder_ / (name + ".crt"), folder_ / (name + ".key")};
  const fs::path request = folder_ / (name + ".csr");
  openssl(folder_, {"req", "-new", "-config", openssl_config_.string(), "-newkey", "ec",
                    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj",
                    "/CN=" + name, "-keyout", issued.key.string(), "-out", request.string()});
  openssl(folder_, {"x509", "-req", "-in", request.string(), "-CA", ca_.cert.string(), "-CAkey",
                    ca_.key.string(), "-set_serial", random_serial(), "-days", kValidDays,
                    "-extfile", openssl_config_.string(), "-extensions", extensions, "-out",
                    issued.cert.string()});
  return issued;
}

}  // namespace svdserve::testing
