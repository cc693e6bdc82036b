#include "server/process/pem_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace svdserve {
namespace {

// Certificate chains and keys are a few KiB; a bound keeps /dev/zero-like mistakes harmless.
constexpr off_t kMaxPemBytes = 1 << 20;

std::string system_reason(int error) { return std::string("(") + std::strerror(error) + ")"; }

// PEM headers as OpenSSL writes them: "-----BEGIN CERTIFICATE-----", "-----BEGIN PRIVATE
// KEY-----", "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----".
bool has_pem_block(std::string_view text, PemContent content) {
  const std::string_view label_end =
      content == PemContent::certificate ? "CERTIFICATE-----" : "PRIVATE KEY-----";
  for (auto begin = text.find("-----BEGIN "); begin != std::string_view::npos;
       begin = text.find("-----BEGIN ", begin + 1)) {
    const auto line_end = text.find('\n', begin);
    const std::string_view line = text.substr(begin, line_end - begin);
    if (line.find(label_end) != std::string_view::npos &&
        line.find("ENCRYPTED") == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::optional<std::string> pem_file_problem(const std::string& path, PemContent content) {
  // O_NONBLOCK: a FIFO at the path must not hang the start.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "cannot be read " + system_reason(errno);
  struct stat info {};
  std::optional<std::string> problem;
  if (fstat(fd, &info) != 0) {
    problem = "cannot be read " + system_reason(errno);
  } else if (!S_ISREG(info.st_mode)) {
    problem = "is not a regular file";
  } else if (info.st_size > kMaxPemBytes) {
    problem = "is larger than 1 MiB, too large for a PEM file";
  } else {
    std::string text(static_cast<std::size_t>(info.st_size), '\0');
    std::size_t filled = 0;
    while (filled < text.size()) {
      const ssize_t n = read(fd, text.data() + filled, text.size() - filled);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      filled += static_cast<std::size_t>(n);
    }
    text.resize(filled);
    if (!has_pem_block(text, content)) {
      problem = content == PemContent::certificate
                    ? "holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
                    : "holds no unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)";
    }
  }
  close(fd);
  return problem;
}

}  // namespace svdserve
