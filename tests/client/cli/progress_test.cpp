#include "client/cli/progress.hpp"

#include <gtest/gtest.h>

#include <sstream>

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

}  // namespace
}  // namespace svdserve::cli
