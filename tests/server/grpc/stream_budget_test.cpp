#include "server/grpc/stream_budget.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace svdserve {
namespace {

using namespace std::chrono_literals;

TEST(StreamBudget, CountsARequestsLife) {
  StreamBudget budget(2);
  EXPECT_TRUE(budget.has_room());
  budget.read();
  budget.read();
  EXPECT_FALSE(budget.has_room()) << "two computing of two";
  budget.computed();
  EXPECT_TRUE(budget.has_room());
  budget.stopped_reading();
  StreamBudgetSample sample = budget.sample();
  EXPECT_EQ(sample.computing, 1u);
  EXPECT_EQ(sample.waiting_streams, 1u);
  EXPECT_EQ(sample.max_computing, 2u);

  budget.reading_again();
  budget.computed();
  sample = budget.sample();
  EXPECT_EQ(sample.computing, 0u);
  EXPECT_EQ(sample.waiting_streams, 0u);
}

TEST(StreamBudget, WaitUntilWakesOnTheChangeThatReachesTheCondition) {
  StreamBudget budget(8);
  budget.read();
  std::jthread stream([&] {
    budget.computed();
    budget.stopped_reading();
  });
  EXPECT_TRUE(budget.wait_until(
      [](const StreamBudgetSample& s) { return s.waiting_streams == 1 && s.computing == 0; }, 30s));
}

TEST(StreamBudget, WaitUntilGivesUpAtTheTimeout) {
  const StreamBudget budget(8);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(budget.wait_until([](const StreamBudgetSample& s) { return s.computing > 0; }, 20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - start, 20ms);
  EXPECT_TRUE(budget.wait_until([](const StreamBudgetSample& s) { return s.computing == 0; }, 0ms))
      << "a condition that holds already needs no change";
}

}  // namespace
}  // namespace svdserve
