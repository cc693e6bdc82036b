#include "kernels/cpu/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace svdserve {
namespace {

TEST(WorkerPool, RunsEveryIndexOnce) {
  WorkerPool pool(3);
  EXPECT_EQ(pool.size(), 3U);
  constexpr std::size_t kCount = 1000;
  std::vector<std::atomic<int>> runs(kCount);
  std::atomic<bool> bad_worker{false};
  pool.run(kCount, [&](std::size_t index, unsigned worker) {
    ++runs[index];
    if (worker >= 3) bad_worker = true;
  });
  for (std::size_t i = 0; i < kCount; ++i) EXPECT_EQ(runs[i].load(), 1) << "index " << i;
  EXPECT_FALSE(bad_worker.load());
}

TEST(WorkerPool, HasAtLeastOneThread) {
  WorkerPool pool(0);
  EXPECT_EQ(pool.size(), 1U);
  std::atomic<int> runs{0};
  pool.run(3, [&](std::size_t, unsigned) { ++runs; });
  EXPECT_EQ(runs.load(), 3);
}

TEST(WorkerPool, ZeroTasksReturnAtOnce) {
  WorkerPool pool(1);
  pool.run(0, [](std::size_t, unsigned) { FAIL() << "no task should run"; });
}

TEST(WorkerPool, RethrowsTheLowestFailingIndexAfterAllFinish) {
  WorkerPool pool(2);
  std::atomic<int> finished{0};
  try {
    pool.run(50, [&](std::size_t index, unsigned) {
      ++finished;
      if (index == 7 || index == 31) throw std::runtime_error(std::to_string(index));
    });
    FAIL() << "run should have thrown";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ(error.what(), "7");
  }
  EXPECT_EQ(finished.load(), 50);
  // The pool is still usable.
  std::atomic<int> after{0};
  pool.run(5, [&](std::size_t, unsigned) { ++after; });
  EXPECT_EQ(after.load(), 5);
}

TEST(WorkerPool, SeveralCallersShareThePool) {
  WorkerPool pool(2);
  constexpr int kCallers = 4;
  constexpr std::size_t kTasks = 200;
  std::vector<std::atomic<std::size_t>> sums(kCallers);
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  {
    std::vector<std::jthread> callers;
    for (int caller = 0; caller < kCallers; ++caller) {
      callers.emplace_back([&, caller] {
        pool.run(kTasks, [&](std::size_t index, unsigned) {
          const int now = ++running;
          int seen = most_running.load();
          while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
          }
          sums[caller] += index;
          --running;
        });
      });
    }
  }
  for (int caller = 0; caller < kCallers; ++caller) {
    EXPECT_EQ(sums[caller].load(), kTasks * (kTasks - 1) / 2) << "caller " << caller;
  }
  EXPECT_LE(most_running.load(), 2) << "the pool size bounds concurrency across callers";
}

}  // namespace
}  // namespace svdserve
