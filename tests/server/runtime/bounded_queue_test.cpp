#include "server/runtime/bounded_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace svdserve {
namespace {

using namespace std::chrono_literals;

constexpr auto kShortWait = 20ms;  // only ever used for "nothing will arrive" timeouts

TEST(BoundedQueue, TryPushRefusesWhenFullAndKeepsTheItem) {
  BoundedQueue<std::unique_ptr<int>> queue(2);
  EXPECT_EQ(queue.capacity(), 2u);
  auto a = std::make_unique<int>(1);
  auto b = std::make_unique<int>(2);
  auto c = std::make_unique<int>(3);
  EXPECT_EQ(queue.try_push(a), PushResult::ok);
  EXPECT_EQ(queue.try_push(b), PushResult::ok);
  EXPECT_EQ(queue.try_push(c), PushResult::full);
  ASSERT_NE(c, nullptr) << "a refused item must stay with the caller";
  EXPECT_EQ(*c, 3);
  EXPECT_EQ(queue.size(), 2u);

  // FIFO order.
  EXPECT_EQ(**queue.pop(), 1);
  EXPECT_EQ(queue.try_push(c), PushResult::ok);
  EXPECT_EQ(**queue.pop(), 2);
  EXPECT_EQ(**queue.pop(), 3);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(BoundedQueue, CloseRejectsPushesButDrainsQueuedItems) {
  BoundedQueue<int> queue(4);
  int one = 1;
  int two = 2;
  ASSERT_EQ(queue.try_push(one), PushResult::ok);
  ASSERT_EQ(queue.try_push(two), PushResult::ok);
  queue.close();
  EXPECT_FALSE(queue.drained()) << "closed but still holding items";

  int three = 3;
  EXPECT_EQ(queue.try_push(three), PushResult::closed);
  EXPECT_EQ(queue.push(three), PushResult::closed);
  EXPECT_EQ(queue.push_until(three, std::chrono::steady_clock::now() + 1s), PushResult::closed);

  EXPECT_EQ(queue.pop(), std::optional<int>(1));
  EXPECT_EQ(queue.pop(), std::optional<int>(2));
  EXPECT_EQ(queue.pop(), std::nullopt) << "closed and empty: pop returns at once";
  EXPECT_TRUE(queue.drained());
}

TEST(BoundedQueue, CloseWakesABlockedConsumer) {
  BoundedQueue<int> queue(1);
  std::optional<int> popped = 42;
  std::thread consumer([&] { popped = queue.pop(); });
  queue.close();
  consumer.join();
  EXPECT_EQ(popped, std::nullopt);
}

TEST(BoundedQueue, CloseWakesABlockedProducer) {
  BoundedQueue<int> queue(1);
  int first = 1;
  ASSERT_EQ(queue.try_push(first), PushResult::ok);
  PushResult result = PushResult::ok;
  std::thread producer([&] {
    int second = 2;
    result = queue.push(second);
  });
  queue.close();
  producer.join();
  EXPECT_EQ(result, PushResult::closed);
}

TEST(BoundedQueue, PopUntilTimesOutOnAnEmptyQueue) {
  BoundedQueue<int> queue(1);
  EXPECT_EQ(queue.pop_until(std::chrono::steady_clock::now() + kShortWait), std::nullopt);
  EXPECT_FALSE(queue.drained()) << "a timeout is not a close";
  // A deadline in the past still returns what is there.
  int value = 7;
  ASSERT_EQ(queue.try_push(value), PushResult::ok);
  EXPECT_EQ(queue.pop_until(std::chrono::steady_clock::now() - 1s), std::optional<int>(7));
}

TEST(BoundedQueue, PushUntilTimesOutWhenFullAndLeavesTheItem) {
  BoundedQueue<std::unique_ptr<int>> queue(1);
  auto first = std::make_unique<int>(1);
  ASSERT_EQ(queue.try_push(first), PushResult::ok);
  auto second = std::make_unique<int>(2);
  EXPECT_EQ(queue.push_until(second, std::chrono::steady_clock::now() + kShortWait),
            PushResult::full);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, 2);
  EXPECT_EQ(queue.size(), 1u);
}

TEST(BoundedQueue, PushUntilSucceedsOnceAConsumerMakesRoom) {
  BoundedQueue<int> queue(1);
  int first = 1;
  ASSERT_EQ(queue.try_push(first), PushResult::ok);
  PushResult result = PushResult::full;
  std::thread producer([&] {
    int second = 2;
    result = queue.push_until(second, std::chrono::steady_clock::now() + 30s);
  });
  EXPECT_EQ(queue.pop(), std::optional<int>(1));
  EXPECT_EQ(queue.pop(), std::optional<int>(2));  // waits for the producer
  producer.join();
  EXPECT_EQ(result, PushResult::ok);
}

TEST(BoundedQueue, ManyProducersAndConsumersLoseAndDuplicateNothing) {
  constexpr int kProducers = 4;
  constexpr int kConsumers = 3;
  constexpr int kItemsPerProducer = 5000;
  BoundedQueue<int> queue(8);  // small, so producers block often

  std::vector<std::atomic<int>> seen(kProducers * kItemsPerProducer);
  std::atomic<int64_t> popped_sum{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      while (std::optional<int> item = queue.pop()) {
        seen[static_cast<std::size_t>(*item)].fetch_add(1);
        popped_sum.fetch_add(*item);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kItemsPerProducer; ++i) {
        int value = p * kItemsPerProducer + i;
        ASSERT_EQ(queue.push(value), PushResult::ok);
      }
    });
  }
  for (auto& t : producers) t.join();
  queue.close();
  for (auto& t : consumers) t.join();

  const int64_t n = kProducers * kItemsPerProducer;
  EXPECT_EQ(popped_sum.load(), n * (n - 1) / 2);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i].load(), 1) << "item " << i;
  }
  EXPECT_TRUE(queue.drained());
}

}  // namespace
}  // namespace svdserve
