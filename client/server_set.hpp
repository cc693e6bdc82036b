#pragma once
// Several svdserve replicas without a load balancer: one Client per server, and the choice of
// server per call. A call about an image goes to the server rendezvous hashing picks for its id
// (rendezvous.hpp), so it finds the image in that replica's cache; calls without an id take
// the servers in turn. A call answered UNAVAILABLE (the server is down or draining) is made
// once more on the next server of the same order: any replica can load any id from the shared
// repository. One server (or one load balancer's address) is the plain case of a set of one.

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.hpp"

namespace svdserve {

class ServerSet {
 public:
  // Throws std::invalid_argument for an empty list; as Client for unreadable TLS files.
  ServerSet(std::vector<std::string> targets, const ClientOptions& options);

  [[nodiscard]] std::size_t size() const noexcept { return clients_.size(); }
  [[nodiscard]] const std::vector<std::string>& targets() const noexcept { return targets_; }
  [[nodiscard]] const Client& client(std::size_t index) const { return *clients_.at(index); }

  // The servers `id` tries, in order: rendezvous order for an id; for an empty id, the next
  // server in turn and then the ones after it.
  [[nodiscard]] std::vector<std::size_t> order_for(std::string_view id) const;

  // call(const Client&) -> grpc::Status or CallResult<T>, on the first server of order_for(id);
  // when it answers UNAVAILABLE and there is another server, once more on the second.
  template <class Call>
  auto call(std::string_view id, Call&& call) const {
    const auto order = order_for(id);
    auto result = call(*clients_[order.front()]);
    if (order.size() > 1 && status_of(result).error_code() == grpc::StatusCode::UNAVAILABLE) {
      result = call(*clients_[order[1]]);
    }
    return result;
  }

 private:
  static const grpc::Status& status_of(const grpc::Status& status) noexcept { return status; }
  template <class T>
  static const grpc::Status& status_of(const CallResult<T>& result) noexcept {
    return result.status();
  }

  std::vector<std::string> targets_;
  std::vector<std::unique_ptr<Client>> clients_;
  mutable std::atomic<std::size_t> next_turn_{0};  // Round robin of the calls without an id.
};

}  // namespace svdserve
