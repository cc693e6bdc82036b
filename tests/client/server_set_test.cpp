// ServerSet against in-process fake servers: calls about an image reach its rendezvous server,
// calls without an id take turns, and UNAVAILABLE moves a call to the id's next server.

#include "client/server_set.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "client/rendezvous.hpp"
#include "fake_server.hpp"

namespace svdserve {
namespace {

class ServerSetTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kServers = 3;

  [[nodiscard]] std::vector<std::string> targets() const {
    std::vector<std::string> addresses;
    for (const auto& server : servers_) addresses.push_back(server.address());
    return addresses;
  }

  std::array<testing::FakeServer, kServers> servers_;
};

TEST_F(ServerSetTest, CallsAboutAnImageReachItsRendezvousServer) {
  const ServerSet set(targets(), ClientOptions{});
  constexpr int kIds = 30;
  for (int i = 0; i < kIds; ++i) {
    const std::string id = "img-" + std::to_string(i);
    const auto decomposed = set.call(id, [&](const Client& client) { return client.decompose("4x4x1", 0, id); });
    ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
    const std::size_t chosen = rendezvous_order(targets(), id).front();
    EXPECT_TRUE(servers_[chosen].service().routing_header("Decompose") == id);
    // It is found there again: the same id goes to the same server.
    EXPECT_TRUE(set.call(id, [&](const Client& client) { return client.get_image(id); }).ok()) << id;
  }
  std::size_t stored = 0;
  for (auto& server : servers_) {
    EXPECT_GT(server.service().image_count(), 0u) << "30 ids all missed one of three servers";
    stored += server.service().image_count();
  }
  EXPECT_EQ(stored, std::size_t{kIds});  // Each id on exactly one server.
}

TEST_F(ServerSetTest, CallsWithoutAnIdTakeTurns) {
  const ServerSet set(targets(), ClientOptions{});
  for (std::size_t i = 0; i < 2 * kServers; ++i) {
    ASSERT_TRUE(set.call({}, [](const Client& client) { return client.decompose("4x4x1"); }).ok());
  }
  for (auto& server : servers_) EXPECT_EQ(server.service().image_count(), 2u);
}

TEST_F(ServerSetTest, UnavailableMovesTheCallToTheIdsNextServer) {
  // Server 0 is down (a loopback port where nothing listens); an id whose order puts it first.
  std::vector<std::string> addresses = targets();
  addresses[0] = "127.0.0.1:1";
  std::string id;
  for (int i = 0; id.empty(); ++i) {
    const std::string candidate = "moved-" + std::to_string(i);
    if (rendezvous_order(addresses, candidate)[0] == 0) id = candidate;
  }
  const ServerSet set(addresses, ClientOptions{});
  const std::size_t second = set.order_for(id)[1];

  const auto decomposed = set.call(id, [&](const Client& client) { return client.decompose("4x4x1", 0, id); });
  ASSERT_TRUE(decomposed.ok()) << decomposed.status().error_message();
  EXPECT_EQ(servers_[second].service().image_count(), 1u);
}

TEST_F(ServerSetTest, OtherFailuresAreNotRetried) {
  const ServerSet set(targets(), ClientOptions{});
  int calls = 0;
  const auto missing = set.call("nowhere", [&](const Client& client) {
    ++calls;
    return client.reconstruct("nowhere", Rank{1});
  });
  EXPECT_EQ(missing.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(calls, 1);
}

TEST(ServerSet, OneServerIsTriedOnce) {
  const ServerSet set({"127.0.0.1:1"}, ClientOptions{});
  int calls = 0;
  const auto status = set.call("x", [&](const Client& client) {
    ++calls;
    return client.server_info();
  });
  EXPECT_EQ(status.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(ServerSet({}, ClientOptions{}), std::invalid_argument);
}

}  // namespace
}  // namespace svdserve
