#pragma once
// --address-file: once the server serves, the address a client on this host reaches it at is
// written to a file (and removed at shutdown), so that a container's HEALTHCHECK or a script that
// started it on port 0 reads the real address instead of assuming one.

#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace svdserve {

// Where a local client connects for a server listening on `listen_address` that got `port`:
// a wildcard host becomes loopback ("0.0.0.0:0" -> "127.0.0.1:PORT", "[::]:0" -> "[::1]:PORT");
// a Unix socket is its own address.
[[nodiscard]] std::string local_client_address(std::string_view listen_address, int port);

class AddressFile {
 public:
  explicit AddressFile(std::string path) : path_(std::move(path)) {}  // empty: none
  AddressFile(const AddressFile&) = delete;
  AddressFile& operator=(const AddressFile&) = delete;
  ~AddressFile() { withdraw(); }

  // Replaces the file's content with `address` and a newline in one rename, so that a reader
  // never sees half of it; nothing once withdrawn. Throws Unavailable when it cannot be written.
  void publish(std::string_view address);
  // Removes the file for good (the server stops serving); a missing file is not an error.
  void withdraw() noexcept;

 private:
  const std::string path_;
  std::mutex mutex_;
  bool withdrawn_ = false;  // guarded by mutex_: a start-up that ends during the shutdown
                            // must not publish again
};

}  // namespace svdserve
