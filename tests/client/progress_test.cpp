#include "client/cli/progress.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "client/cli/parallel.hpp"

namespace svdserve::cli {
namespace {

TEST(ProgressReporter, LinesStyleWritesOneLinePerItem) {
  std::ostringstream err;
  {
    ProgressReporter progress(err, 2, ProgressStyle::lines, "decompose");
    progress.item_done("a.png", true, "4x4x3");
    progress.item_done("b.png", false, "NOT_FOUND: gone");
  }
  EXPECT_EQ(err.str(), "ok    a.png  4x4x3\nFAIL  b.png: NOT_FOUND: gone\n");
}

TEST(ProgressReporter, BarStyleRedrawsInPlaceAndPrintsFailuresAbove) {
  std::ostringstream err;
  {
    ProgressReporter progress(err, 2, ProgressStyle::bar, "decompose");
    progress.item_done("a.png", true, "fine");
    progress.item_done("b.png", false, "INTERNAL: broke");
  }
  const std::string text = err.str();
  EXPECT_NE(text.find("\r\033[KFAIL  b.png: INTERNAL: broke\n"), std::string::npos) << text;
  EXPECT_NE(text.find("2/2, 1 failed"), std::string::npos) << text;
  EXPECT_EQ(text.find("fine"), std::string::npos);  // Successes only move the bar.
  EXPECT_TRUE(text.ends_with("\r\033[K"));          // The bar is cleared at the end.
}

TEST(ProgressReporter, QuietStyleWritesNothing) {
  std::ostringstream err;
  {
    ProgressReporter progress(err, 1, ProgressStyle::quiet, "x");
    progress.item_done("a", false, "bad");
  }
  EXPECT_TRUE(err.str().empty());
}

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
