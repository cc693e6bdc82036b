#include "client/cli/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace svdserve::cli {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnce) {
  constexpr std::size_t kCount = 1000;
  std::vector<std::atomic<int>> visits(kCount);
  parallel_for(kCount, 4, [&](std::size_t i) { ++visits[i]; });
  for (std::size_t i = 0; i < kCount; ++i) EXPECT_EQ(visits[i].load(), 1) << i;
  parallel_for(0, 4, [](std::size_t) { FAIL() << "no items"; });
}

TEST(ParallelFor, RethrowsAnErrorAndSkipsTheRest) {
  const auto throw_at_five = [](std::atomic<int>& calls) {
    return [&calls](std::size_t i) {
      ++calls;
      if (i == 5) throw std::runtime_error("item 5");
    };
  };
  std::atomic<int> calls{0};
  EXPECT_THROW(parallel_for(100, 1, throw_at_five(calls)), std::runtime_error);
  EXPECT_EQ(calls.load(), 6);  // One thread: nothing after the failing item.
  EXPECT_THROW(parallel_for(100, 3, throw_at_five(calls)), std::runtime_error);
}

}  // namespace
}  // namespace svdserve::cli
