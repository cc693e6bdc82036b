#include "server/runtime/dynamic_batcher.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test_factors.hpp"

namespace svdserve {
namespace {

using namespace std::chrono_literals;

// Long enough that a partial batch never flushes on time during a test unless we want it to.
constexpr auto kForever = std::chrono::hours(1);
// How long a test waits for something that must happen; a failure, not a hang, if it does not.
constexpr auto kPatience = 20s;

JobPtr image_job(JobKind kind, ImageShape shape, std::string id, uint32_t max_rank = 8) {
  auto job = std::make_unique<Job>();
  job->kind = kind;
  job->image.shape = shape;
  job->image_id = std::move(id);
  job->max_rank = max_rank;
  return job;
}

JobPtr reconstruct_job(ImageShape shape, std::string id) {
  auto job = std::make_unique<Job>();
  job->kind = JobKind::reconstruct;
  job->factors = fakes::make_test_factors(shape, 4, 1);
  job->image_id = std::move(id);
  return job;
}

// The batcher with its two queues; closes the input before joining, as the batcher requires.
struct BatcherRig {
  explicit BatcherRig(BatcherOptions options)
      : input(64), output(64), batcher(std::make_unique<DynamicBatcher>(options, input, output)) {}
  ~BatcherRig() {
    input.close();
    batcher.reset();
  }

  void push(JobPtr job) { ASSERT_EQ(input.push(job), PushResult::ok); }
  std::optional<Batch> next_batch() { return output.pop_until(Clock::now() + kPatience); }

  BoundedQueue<JobPtr> input;
  BoundedQueue<Batch> output;
  std::unique_ptr<DynamicBatcher> batcher;
};

std::vector<std::string> ids_of(const Batch& batch) {
  std::vector<std::string> ids;
  for (const JobPtr& job : batch) ids.push_back(job->image_id);
  return ids;
}

const ImageShape kSmall{16, 12, 3};
const ImageShape kWide{32, 12, 3};
const ImageShape kGrey{16, 12, 1};

TEST(DynamicBatcher, GroupsSameKeyJobsUpToMaxBatchSizeInArrivalOrder) {
  BatcherRig rig({.max_batch_size = 4, .max_queue_delay = kForever});
  for (int i = 0; i < 8; ++i) rig.push(image_job(JobKind::decompose, kSmall, std::to_string(i)));

  std::optional<Batch> first = rig.next_batch();
  ASSERT_TRUE(first);
  EXPECT_EQ(ids_of(*first), (std::vector<std::string>{"0", "1", "2", "3"}));
  std::optional<Batch> second = rig.next_batch();
  ASSERT_TRUE(second);
  EXPECT_EQ(ids_of(*second), (std::vector<std::string>{"4", "5", "6", "7"}));
  EXPECT_EQ(rig.output.size(), 0u);
}

TEST(DynamicBatcher, NeverMixesKindsShapesOrMaxRanks) {
  constexpr std::size_t kBatch = 3;
  BatcherRig rig({.max_batch_size = kBatch, .max_queue_delay = kForever});
  // Six incompatible groups, interleaved so that every group is open at the same time.
  const std::vector<std::pair<std::string, std::function<JobPtr(std::string)>>> groups = {
      {"decompose-small", [](std::string id) { return image_job(JobKind::decompose, kSmall, id); }},
      {"decompose-wide", [](std::string id) { return image_job(JobKind::decompose, kWide, id); }},
      {"decompose-grey", [](std::string id) { return image_job(JobKind::decompose, kGrey, id); }},
      {"decompose-rank16",
       [](std::string id) { return image_job(JobKind::decompose, kSmall, id, 16); }},
      {"compress-small", [](std::string id) { return image_job(JobKind::compress, kSmall, id); }},
      {"reconstruct-small", [](std::string id) { return reconstruct_job(kSmall, id); }},
  };
  for (std::size_t round = 0; round < kBatch; ++round) {
    for (const auto& [name, make] : groups) rig.push(make(name + "/" + std::to_string(round)));
  }

  std::set<std::string> seen_groups;
  for (std::size_t b = 0; b < groups.size(); ++b) {
    std::optional<Batch> batch = rig.next_batch();
    ASSERT_TRUE(batch) << "batch " << b << " never came";
    ASSERT_EQ(batch->size(), kBatch);
    const BatchKey key = batch_key(*batch->front());
    const std::string group = batch->front()->image_id.substr(0, batch->front()->image_id.find('/'));
    for (const JobPtr& job : *batch) {
      EXPECT_EQ(batch_key(*job), key);
      EXPECT_EQ(job->image_id.substr(0, job->image_id.find('/')), group) << "mixed batch";
    }
    EXPECT_TRUE(seen_groups.insert(group).second) << group << " came twice";
  }
  EXPECT_EQ(seen_groups.size(), groups.size());
}

TEST(DynamicBatcher, BatchKeyOfReconstructUsesTheFactorsShape) {
  JobPtr job = reconstruct_job(kWide, "r");
  job->image.shape = kSmall;  // ignored: reconstruct jobs carry no image
  job->max_rank = 99;         // ignored too
  const BatchKey key = batch_key(*job);
  EXPECT_EQ(key.kind, JobKind::reconstruct);
  EXPECT_EQ(key.shape, kWide);
  EXPECT_EQ(key.max_rank, 0u);

  // Compress ignores max_rank: its rank is chosen per job.
  EXPECT_EQ(batch_key(*image_job(JobKind::compress, kSmall, "a", 1)),
            batch_key(*image_job(JobKind::compress, kSmall, "b", 2)));
  EXPECT_NE(batch_key(*image_job(JobKind::decompose, kSmall, "a", 1)),
            batch_key(*image_job(JobKind::decompose, kSmall, "b", 2)));
}

TEST(DynamicBatcher, FlushesAPartialBatchAfterTheQueueDelay) {
  BatcherRig rig({.max_batch_size = 16, .max_queue_delay = 2ms});
  rig.push(image_job(JobKind::decompose, kSmall, "a"));
  rig.push(image_job(JobKind::decompose, kSmall, "b"));

  // The input stays open: only the delay can release these two.
  std::vector<std::string> ids;
  while (ids.size() < 2) {
    std::optional<Batch> batch = rig.next_batch();
    ASSERT_TRUE(batch) << "the partial batch was never flushed";
    EXPECT_LE(batch->size(), 2u);
    for (const auto& id : ids_of(*batch)) ids.push_back(id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(rig.input.drained());
}

TEST(DynamicBatcher, DecomposeAndCompressBatchesWaitTheirOwnLongerDelay) {
  BatcherRig rig({.max_batch_size = 16, .max_queue_delay = 0us, .decompose_queue_delay = kForever});
  rig.push(image_job(JobKind::decompose, kSmall, "d1"));
  rig.push(image_job(JobKind::compress, kSmall, "c1"));
  rig.push(reconstruct_job(kSmall, "r1"));

  // The reconstruct leaves at once; decompose and compress wait for company.
  std::optional<Batch> first = rig.next_batch();
  ASSERT_TRUE(first);
  EXPECT_EQ(ids_of(*first), (std::vector<std::string>{"r1"}));
  rig.push(image_job(JobKind::decompose, kSmall, "d2"));
  rig.input.close();
  std::vector<std::vector<std::string>> rest;
  while (std::optional<Batch> batch = rig.next_batch()) rest.push_back(ids_of(*batch));
  std::ranges::sort(rest);
  EXPECT_EQ(rest, (std::vector<std::vector<std::string>>{{"c1"}, {"d1", "d2"}}));
}

TEST(DynamicBatcher, ClosingTheInputFlushesEveryPendingGroupAndClosesTheOutput) {
  BatcherRig rig({.max_batch_size = 16, .max_queue_delay = kForever});
  rig.push(image_job(JobKind::decompose, kSmall, "s1"));
  rig.push(image_job(JobKind::decompose, kWide, "w1"));
  rig.push(image_job(JobKind::decompose, kSmall, "s2"));
  rig.push(reconstruct_job(kSmall, "r1"));
  rig.input.close();

  std::map<std::string, std::vector<std::string>> batches;  // first id -> ids
  for (;;) {
    std::optional<Batch> batch = rig.next_batch();
    if (!batch) break;
    batches[batch->front()->image_id] = ids_of(*batch);
  }
  EXPECT_TRUE(rig.output.drained()) << "the output must be closed, not just slow";
  EXPECT_EQ(batches, (std::map<std::string, std::vector<std::string>>{
                         {"s1", {"s1", "s2"}}, {"w1", {"w1"}}, {"r1", {"r1"}}}));
}

TEST(DynamicBatcher, ClosingAnIdleBatcherClosesTheOutput) {
  BatcherRig rig({.max_batch_size = 4, .max_queue_delay = kForever});
  rig.input.close();
  EXPECT_FALSE(rig.next_batch().has_value());
  EXPECT_TRUE(rig.output.drained());
}

TEST(DynamicBatcher, EveryJobComesOutExactlyOnce) {
  BatcherRig rig({.max_batch_size = 5, .max_queue_delay = 100us});
  constexpr int kJobs = 300;
  const ImageShape shapes[] = {kSmall, kWide, kGrey};
  std::thread producer([&] {
    for (int i = 0; i < kJobs; ++i) {
      rig.push(image_job(i % 2 ? JobKind::decompose : JobKind::compress, shapes[i % 3],
                         std::to_string(i)));
    }
    rig.input.close();
  });
  std::multiset<std::string> ids;
  while (std::optional<Batch> batch = rig.next_batch()) {
    EXPECT_LE(batch->size(), 5u);
    for (const JobPtr& job : *batch) {
      EXPECT_EQ(batch_key(*job), batch_key(*batch->front()));
      ids.insert(job->image_id);
    }
  }
  producer.join();
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) EXPECT_EQ(ids.count(std::to_string(i)), 1u) << i;
}

}  // namespace
}  // namespace svdserve
