#include "server/grpc/ordered_responses.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace svdserve {
namespace {

TEST(OrderedResponses, SequenceNumbersCountUp) {
  OrderedResponses<std::string> responses;
  EXPECT_TRUE(responses.idle());
  EXPECT_EQ(responses.reserve(), 0u);
  EXPECT_EQ(responses.reserve(), 1u);
  EXPECT_EQ(responses.reserve(), 2u);
  EXPECT_EQ(responses.outstanding(), 3u);
  EXPECT_FALSE(responses.idle());
}

TEST(OrderedResponses, OutOfOrderResultsAreWrittenInRequestOrder) {
  OrderedResponses<std::string> responses;
  for (int i = 0; i < 3; ++i) (void)responses.reserve();

  EXPECT_EQ(responses.deliver(2, "c"), nullptr) << "0 and 1 are still missing";
  EXPECT_EQ(responses.deliver(1, "b"), nullptr) << "0 is still missing";
  std::string* first = responses.deliver(0, "a");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(*first, "a");
  EXPECT_EQ(responses.outstanding(), 0u);
  EXPECT_FALSE(responses.idle()) << "a write is in flight";

  std::string* second = responses.written();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, "b");
  std::string* third = responses.written();
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(*third, "c");
  EXPECT_EQ(responses.written(), nullptr);
  EXPECT_TRUE(responses.idle());
}

TEST(OrderedResponses, UnwrittenCountsUntilTheWriteFinishes) {
  OrderedResponses<std::string> responses;
  (void)responses.reserve();
  (void)responses.reserve();
  EXPECT_EQ(responses.unwritten(), 2u);
  ASSERT_NE(responses.deliver(0, "a"), nullptr);
  EXPECT_EQ(responses.outstanding(), 1u);
  EXPECT_EQ(responses.unwritten(), 2u) << "delivered is not written";
  EXPECT_EQ(responses.written(), nullptr);
  EXPECT_EQ(responses.unwritten(), 1u);
  ASSERT_NE(responses.deliver(1, "b"), nullptr);
  EXPECT_EQ(responses.written(), nullptr);
  EXPECT_EQ(responses.unwritten(), 0u);
}

TEST(OrderedResponses, OnlyOneWriteIsInFlight) {
  OrderedResponses<std::string> responses;
  (void)responses.reserve();
  (void)responses.reserve();
  std::string* first = responses.deliver(0, "a");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(responses.deliver(1, "b"), nullptr) << "the next is ready, but a write is in flight";
  EXPECT_EQ(*first, "a") << "the pointer stays valid until written()";
  std::string* second = responses.written();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(*second, "b");
  EXPECT_EQ(responses.written(), nullptr);
  EXPECT_TRUE(responses.idle());
}

TEST(OrderedResponses, WaitsAgainWhenTheNextResultIsMissing) {
  OrderedResponses<int> responses;
  for (int i = 0; i < 3; ++i) (void)responses.reserve();
  ASSERT_NE(responses.deliver(0, 10), nullptr);
  EXPECT_EQ(responses.written(), nullptr) << "1 has not arrived";
  EXPECT_FALSE(responses.idle());
  EXPECT_EQ(responses.deliver(2, 12), nullptr);
  int* next = responses.deliver(1, 11);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(*next, 11);
  next = responses.written();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(*next, 12);
  EXPECT_EQ(responses.written(), nullptr);
  EXPECT_TRUE(responses.idle());
}

// A simulated stream: results arrive in random order, interleaved with write completions; the
// writer sees every response once, in request order, and never two at a time.
TEST(OrderedResponses, RandomDeliveryIsWrittenInOrder) {
  constexpr int kRequests = 200;
  for (unsigned seed = 1; seed <= 5; ++seed) {
    std::mt19937 random(seed);
    OrderedResponses<int> responses;
    std::vector<uint64_t> sequences(kRequests);
    for (auto& s : sequences) s = responses.reserve();
    std::shuffle(sequences.begin(), sequences.end(), random);

    std::vector<int> written;
    int* in_flight = nullptr;
    auto start_write = [&](int* response) {
      if (!response) return;
      ASSERT_EQ(in_flight, nullptr) << "two writes in flight";
      in_flight = response;
    };
    for (uint64_t sequence : sequences) {
      start_write(responses.deliver(sequence, static_cast<int>(sequence) * 3));
      // Sometimes the write in flight finishes before the next result arrives.
      if (in_flight && random() % 2 == 0) {
        written.push_back(*in_flight);
        in_flight = nullptr;
        start_write(responses.written());
      }
    }
    while (in_flight) {
      written.push_back(*in_flight);
      in_flight = nullptr;
      start_write(responses.written());
    }

    std::vector<int> expected(kRequests);
    for (int i = 0; i < kRequests; ++i) expected[static_cast<std::size_t>(i)] = i * 3;
    EXPECT_EQ(written, expected) << "seed " << seed;
    EXPECT_TRUE(responses.idle());
  }
}

}  // namespace
}  // namespace svdserve
