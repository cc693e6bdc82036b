#pragma once
// Several clients to one server, each on its own connection, shared round-robin by the load's
// callers. gRPC carries all calls of a channel over one HTTP/2 connection (one TCP stream, one
// transport lock), and channels with equal arguments share it; at high concurrency with large
// messages that one connection, not the server, can be the limit.

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "client/client.hpp"

namespace svdserve::loadgen {

class ClientPool {
 public:
  // connections >= 1. options.dedicated_connection is set for every client.
  ClientPool(const std::string& target, ClientOptions options, std::size_t connections);

  // Opens every connection now, so no measured call pays for one; false when one did not open
  // within timeout.
  [[nodiscard]] bool connect_all(std::chrono::milliseconds timeout) const;

  [[nodiscard]] std::size_t size() const noexcept { return clients_.size(); }
  [[nodiscard]] const Client& for_caller(std::size_t caller) const noexcept {
    return clients_[caller % clients_.size()];
  }

 private:
  std::vector<Client> clients_;
};

}  // namespace svdserve::loadgen
