#include "server/runtime/host_buffer_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

constexpr std::size_t kKiB = 1024;

// The real CPU backend gives the pool its memory, as in the server.
class HostBufferPoolTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 1});
};

// Fills a buffer and reads it back: the memory is really there and the buffer's own.
void expect_usable(const HostBuffer& buffer, std::byte value) {
  std::memset(buffer.data(), static_cast<int>(value), buffer.size());
  EXPECT_TRUE(std::ranges::all_of(buffer.bytes(), [&](std::byte b) { return b == value; }));
}

TEST_F(HostBufferPoolTest, AGivenBackBufferIsReused) {
  HostBufferPool pool(*backend_, 64 * kKiB);
  std::byte* first = nullptr;
  {
    HostBuffer buffer = pool.acquire(10 * kKiB);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), 10 * kKiB);
    EXPECT_TRUE(buffer.from_pool());
    expect_usable(buffer, std::byte{0x5a});
    first = buffer.data();
    EXPECT_EQ(pool.stats().in_use_bytes, 10 * kKiB);
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  for (int i = 0; i < 5; ++i) {
    HostBuffer again = pool.acquire(10 * kKiB);
    EXPECT_EQ(again.data(), first);
  }
  const HostBufferPoolStats stats = pool.stats();
  EXPECT_EQ(stats.allocations, 1u);
  EXPECT_EQ(stats.reuses, 5u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_EQ(stats.pooled_bytes, 10 * kKiB);
  EXPECT_EQ(stats.capacity_bytes, 64 * kKiB);
}

TEST_F(HostBufferPoolTest, AnIdleBufferServesSmallerRequestsUpToHalfOfItUnused) {
  HostBufferPool pool(*backend_, 64 * kKiB);
  (void)pool.acquire(10 * kKiB);  // made and given back at once
  {
    HostBuffer smaller = pool.acquire(6 * kKiB);  // 4 KiB unused: fits
    EXPECT_EQ(smaller.size(), 6 * kKiB);
    EXPECT_EQ(pool.stats().reuses, 1u);
    EXPECT_EQ(pool.stats().in_use_bytes, 10 * kKiB);  // the whole buffer is lent
  }
  HostBuffer much_smaller = pool.acquire(4 * kKiB);  // 6 KiB unused: too wasteful, a new one
  EXPECT_EQ(pool.stats().reuses, 1u);
  EXPECT_EQ(pool.stats().allocations, 2u);
}

TEST_F(HostBufferPoolTest, BeyondTheCapBuffersComeFromOrdinaryMemory) {
  HostBufferPool pool(*backend_, 30 * kKiB);
  std::vector<HostBuffer> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool.acquire(10 * kKiB));
  EXPECT_EQ(pool.stats().pooled_bytes, 30 * kKiB);
  for (int i = 0; i < 2; ++i) held.push_back(pool.acquire(10 * kKiB));
  HostBuffer too_big = pool.acquire(31 * kKiB);  // over the cap on its own

  HostBufferPoolStats stats = pool.stats();
  EXPECT_EQ(stats.allocations, 3u);
  EXPECT_EQ(stats.fallbacks, 3u);
  EXPECT_LE(stats.pooled_bytes, stats.capacity_bytes);
  EXPECT_EQ(stats.in_use_bytes, 81 * kKiB);
  EXPECT_FALSE(held.back().from_pool());
  EXPECT_FALSE(too_big.from_pool());
  for (const HostBuffer& buffer : held) expect_usable(buffer, std::byte{0x11});
  expect_usable(too_big, std::byte{0x22});

  held.clear();
  too_big = HostBuffer();
  stats = pool.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.pooled_bytes, 30 * kKiB);  // fallback memory is freed, not kept
}

TEST_F(HostBufferPoolTest, IdleBuffersOfAnotherSizeMakeRoomForANewOne) {
  HostBufferPool pool(*backend_, 30 * kKiB);
  {
    std::vector<HostBuffer> held;
    for (int i = 0; i < 3; ++i) held.push_back(pool.acquire(10 * kKiB));
  }
  HostBuffer large = pool.acquire(25 * kKiB);
  const HostBufferPoolStats stats = pool.stats();
  EXPECT_TRUE(large.from_pool());
  EXPECT_EQ(stats.allocations, 4u);
  EXPECT_EQ(stats.fallbacks, 0u);
  EXPECT_EQ(stats.pooled_bytes, 25 * kKiB);
}

TEST_F(HostBufferPoolTest, ZeroBytesIsAnEmptyBufferAndNoAllocation) {
  HostBufferPool pool(*backend_, 30 * kKiB);
  HostBuffer empty = pool.acquire(0);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_TRUE(empty.bytes().empty());
  const HostBufferPoolStats stats = pool.stats();
  EXPECT_EQ(stats.allocations + stats.fallbacks + stats.reuses, 0u);
}

TEST_F(HostBufferPoolTest, MovesTransferTheBufferAndAssignmentGivesBackTheOldOne) {
  HostBufferPool pool(*backend_, 64 * kKiB);
  HostBuffer a = pool.acquire(4 * kKiB);
  std::byte* const memory = a.data();
  HostBuffer b = std::move(a);
  EXPECT_EQ(b.data(), memory);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.size(), 0u);       // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(pool.stats().in_use_bytes, 4 * kKiB);
  b = pool.acquire(8 * kKiB);
  EXPECT_EQ(pool.stats().in_use_bytes, 8 * kKiB);
}

// Buffers handed to gRPC may come back after the pool is gone; they free themselves.
TEST_F(HostBufferPoolTest, BuffersMayOutliveThePool) {
  auto pool = std::make_unique<HostBufferPool>(*backend_, 64 * kKiB);
  HostBuffer pooled = pool->acquire(4 * kKiB);
  HostBuffer idle = pool->acquire(4 * kKiB);
  idle = HostBuffer();
  pool.reset();
  expect_usable(pooled, std::byte{0x33});
  pooled = HostBuffer();  // no pool to go back to: freed
}

// Buffers are taken and given back on different threads, as the pipeline and gRPC do.
TEST_F(HostBufferPoolTest, ManyThreadsAcquireAndGiveBackUnderTheCap) {
  constexpr std::size_t kCap = 64 * kKiB;
  HostBufferPool pool(*backend_, kCap);
  constexpr int kThreads = 8;
  constexpr int kRounds = 500;
  std::atomic<bool> over_cap{false};
  std::atomic<bool> corrupted{false};
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      std::uniform_int_distribution<std::size_t> kib(1, 12);
      std::vector<HostBuffer> held;
      for (int round = 0; round < kRounds; ++round) {
        HostBuffer buffer = pool.acquire(kib(random) * kKiB);
        const auto mark = static_cast<std::byte>(t * 31 + round);
        std::memset(buffer.data(), static_cast<int>(mark), buffer.size());
        held.push_back(std::move(buffer));
        if (held.size() == 3) {
          for (const HostBuffer& h : held) {
            if (std::ranges::any_of(h.bytes(), [&](std::byte b) { return b != h.bytes()[0]; })) {
              corrupted = true;
            }
          }
          held.clear();
        }
        if (pool.stats().pooled_bytes > kCap) over_cap = true;
      }
    });
  }
  threads.clear();  // joins
  EXPECT_FALSE(over_cap);
  EXPECT_FALSE(corrupted);
  const HostBufferPoolStats stats = pool.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_GT(stats.reuses, 0u);
  EXPECT_EQ(stats.reuses + stats.allocations + stats.fallbacks,
            static_cast<uint64_t>(kThreads * kRounds));
}

// A backend out of its (page-locked) memory does not fail the request: ordinary memory serves.
class NoOutputMemoryBackend final : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "no-output-memory"; }
  [[nodiscard]] std::string device_description() const override { return "test double"; }
  using Backend::decompose;
  std::vector<std::shared_ptr<const Factors>> decompose(std::span<const DecodedImage* const>,
                                                        uint32_t, const StopCheck&) override {
    return {};
  }
  [[nodiscard]] double decompose_seconds_estimate(const ImageShape&, uint32_t) const override {
    return 0.0;
  }
  void reconstruct(std::span<const ReconstructItem>) override {}
  [[nodiscard]] HostMemory allocate_output_memory(std::size_t) override {
    throw ResourceExhausted("no page-locked memory left");
  }
  void start_profiling() override {}
  void stop_profiling() override {}
};

TEST(HostBufferPool, BackendOutOfMemoryFallsBackToOrdinaryMemory) {
  NoOutputMemoryBackend backend;
  HostBufferPool pool(backend, 64 * kKiB);
  {
    HostBuffer buffer = pool.acquire(4 * kKiB);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_FALSE(buffer.from_pool());
    expect_usable(buffer, std::byte{0x44});
    const HostBufferPoolStats stats = pool.stats();
    EXPECT_EQ(stats.fallbacks, 1u);
    EXPECT_EQ(stats.allocations, 0u);
    EXPECT_EQ(stats.pooled_bytes, 0u);  // the reservation was given back
  }
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
}

}  // namespace
}  // namespace svdserve
