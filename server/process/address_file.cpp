#include "server/process/address_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "kernels/errors.hpp"
#include "server/process/listen_address.hpp"

namespace svdserve {

std::string local_client_address(std::string_view listen_address, int port) {
  if (is_unix_socket(listen_address)) return std::string(listen_address);
  const std::string host = listen_host(listen_address);
  const std::string port_text = std::to_string(port);
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1:" + port_text;
  if (host == "::") return "[::1]:" + port_text;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + port_text;
  return host + ":" + port_text;
}

void AddressFile::publish(std::string_view address) {
  const std::lock_guard lock(mutex_);
  if (path_.empty() || withdrawn_) return;
  const std::string staged = path_ + ".tmp";
  std::ofstream out(staged, std::ios::trunc);
  out << address << '\n';
  out.close();
  std::error_code error;
  if (out) std::filesystem::rename(staged, path_, error);
  if (!out || error) {
    std::error_code ignored;
    std::filesystem::remove(staged, ignored);
    throw Unavailable("cannot write the address file " + path_);
  }
}

void AddressFile::withdraw() noexcept {
  const std::lock_guard lock(mutex_);
  withdrawn_ = true;
  if (path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace svdserve
