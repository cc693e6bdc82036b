#include "client/loadgen/client_pool.hpp"

#include <algorithm>

namespace svdserve::loadgen {

ClientPool::ClientPool(const std::string& target, ClientOptions options, std::size_t connections) {
  options.dedicated_connection = true;
  const std::size_t count = std::max<std::size_t>(connections, 1);
  clients_.reserve(count);
  for (std::size_t i = 0; i < count; ++i) clients_.emplace_back(target, options);
}

bool ClientPool::connect_all(std::chrono::milliseconds timeout) const {
  return std::ranges::all_of(clients_, [timeout](const Client& client) { return client.wait_for_connected(timeout); });
}

}  // namespace svdserve::loadgen
