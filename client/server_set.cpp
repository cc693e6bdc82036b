#include "client/server_set.hpp"

#include <stdexcept>
#include <utility>

#include "client/rendezvous.hpp"

namespace svdserve {

ServerSet::ServerSet(std::vector<std::string> targets, const ClientOptions& options)
    : targets_(std::move(targets)) {
  if (targets_.empty()) throw std::invalid_argument("a server set needs at least one server");
  clients_.reserve(targets_.size());
  for (const auto& target : targets_) clients_.push_back(std::make_unique<Client>(target, options));
}

std::vector<std::size_t> ServerSet::order_for(std::string_view id) const {
  if (!id.empty()) return rendezvous_order(targets_, id);
  const std::size_t first = next_turn_.fetch_add(1, std::memory_order_relaxed) % targets_.size();
  std::vector<std::size_t> order;
  order.reserve(targets_.size());
  for (std::size_t i = 0; i < targets_.size(); ++i) order.push_back((first + i) % targets_.size());
  return order;
}

}  // namespace svdserve
