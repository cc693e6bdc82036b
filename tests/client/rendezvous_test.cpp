// Rendezvous hashing: the same id always picks the same server, ids spread over the servers,
// and a removed server's ids move to their next server while the others stay.

#include "client/rendezvous.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace svdserve {
namespace {

const std::vector<std::string> kServers = {"10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051",
                                           "10.0.0.4:50051"};

std::string id_of(int i) { return "image-" + std::to_string(i); }

TEST(Rendezvous, AnOrderNamesEveryServerOnce) {
  auto order = rendezvous_order(kServers, "cat.png");
  ASSERT_EQ(order.size(), kServers.size());
  std::ranges::sort(order);
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(Rendezvous, TheSameIdAlwaysPicksTheSameServers) {
  for (int i = 0; i < 100; ++i) EXPECT_EQ(rendezvous_order(kServers, id_of(i)), rendezvous_order(kServers, id_of(i)));
}

TEST(Rendezvous, WeightsAreStableAcrossBuilds) {
  // Every client must route alike: FNV-1a 64 of "server\0id", then SplitMix64's finaliser.
  EXPECT_EQ(rendezvous_weight("a", "b"), rendezvous_weight("a", "b"));
  EXPECT_NE(rendezvous_weight("ab", "c"), rendezvous_weight("a", "bc"));
  EXPECT_EQ(rendezvous_weight("127.0.0.1:50061", "cat.png"), 0x62CE6E8B3678AFC4ULL);
}

TEST(Rendezvous, IdsSpreadEvenly) {
  constexpr int kIds = 4000;
  std::map<std::size_t, int> first_choices;
  for (int i = 0; i < kIds; ++i) ++first_choices[rendezvous_order(kServers, id_of(i)).front()];
  ASSERT_EQ(first_choices.size(), kServers.size());
  const int expected = kIds / static_cast<int>(kServers.size());
  constexpr int kSlack = 150;  // About 5 standard deviations of a binomial(4000, 1/4).
  for (const auto& [server, count] : first_choices) EXPECT_NEAR(count, expected, kSlack) << kServers[server];
}

TEST(Rendezvous, RemovingAServerMovesOnlyItsIdsToTheirNextServer) {
  constexpr std::size_t kRemoved = 2;
  std::vector<std::string> fewer = kServers;
  fewer.erase(fewer.begin() + kRemoved);
  for (int i = 0; i < 1000; ++i) {
    const auto before = rendezvous_order(kServers, id_of(i));
    const auto after = rendezvous_order(fewer, id_of(i));
    // The failover order is the order without the removed server.
    std::vector<std::string> expected;
    for (const auto index : before) {
      if (index != kRemoved) expected.push_back(kServers[index]);
    }
    std::vector<std::string> actual;
    for (const auto index : after) actual.push_back(fewer[index]);
    EXPECT_EQ(actual, expected) << id_of(i);
  }
}

}  // namespace
}  // namespace svdserve
