#include "server/runtime/factor_store.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "kernels/errors.hpp"
#include "test_factors.hpp"

namespace svdserve {
namespace {

using Ids = std::vector<std::string>;

constexpr std::size_t kBudget = 100;
constexpr std::size_t kHistory = 8;
const ImageShape kShape{24, 16, 3};

std::shared_ptr<const Factors> factors_of(std::size_t bytes, uint32_t rank = 4) {
  return fakes::make_test_factors(kShape, rank, bytes);
}

Ids resident_ids(const FactorStore& store) {
  Ids ids;
  for (const auto& info : store.list(false)) ids.push_back(info.id);
  return ids;
}

// Runs f, expects it to throw E, and returns the message.
template <typename E, typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

TEST(FactorStore, AccountsBytesAndImages) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory));
  EXPECT_EQ(store.budget_bytes(), kBudget);
  EXPECT_EQ(store.bytes_resident(), 0u);
  EXPECT_TRUE(store.insert("a", factors_of(30)).empty());
  EXPECT_TRUE(store.insert("b", factors_of(45)).empty());
  EXPECT_TRUE(store.insert("c", factors_of(25)).empty()) << "exactly the budget fits";
  EXPECT_EQ(store.bytes_resident(), 100u);
  EXPECT_EQ(store.images_resident(), 3u);
  EXPECT_EQ(store.evictions(), 0u);

  const auto info = store.info("b");
  ASSERT_TRUE(info);
  EXPECT_EQ(info->id, "b");
  EXPECT_EQ(info->shape, kShape);
  EXPECT_EQ(info->rank_kept, 4u);
  EXPECT_EQ(info->bytes, 45u);
  EXPECT_TRUE(info->resident);
  EXPECT_GT(info->created_unix_ms, 0);
}

TEST(FactorStore, EvictsLeastRecentlyUsedAndFindRefreshesRecency) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory));
  (void)store.insert("a", factors_of(30));
  (void)store.insert("b", factors_of(30));
  (void)store.insert("c", factors_of(30));
  EXPECT_EQ(resident_ids(store), (Ids{"c", "b", "a"}));

  (void)store.find("a");  // a becomes the newest; b is now the oldest
  EXPECT_EQ(resident_ids(store), (Ids{"a", "c", "b"}));
  EXPECT_EQ(store.insert("d", factors_of(30)), (Ids{"b"}));
  EXPECT_EQ(resident_ids(store), (Ids{"d", "a", "c"}));

  // info() and peek() do not touch recency.
  (void)store.info("c");
  EXPECT_NE(store.peek("c"), nullptr);
  EXPECT_EQ(resident_ids(store), (Ids{"d", "a", "c"}));

  // A big image evicts as many as it needs, oldest first.
  EXPECT_EQ(store.insert("e", factors_of(70)), (Ids{"c", "a"}));
  EXPECT_EQ(resident_ids(store), (Ids{"e", "d"}));
  EXPECT_EQ(store.bytes_resident(), 100u);
  EXPECT_EQ(store.evictions(), 3u);
}

TEST(FactorStore, RejectPolicyThrowsAndLeavesContentsUntouched) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::reject, kHistory));
  const auto a = factors_of(60);
  (void)store.insert("a", a);
  const std::string message =
      error_message<ResourceExhausted>([&] { (void)store.insert("b", factors_of(60)); });
  EXPECT_NE(message.find("memory budget full"), std::string::npos) << message;
  EXPECT_NE(message.find("'b'"), std::string::npos) << message;

  EXPECT_EQ(resident_ids(store), (Ids{"a"}));
  EXPECT_EQ(store.peek("a"), a);
  EXPECT_EQ(store.bytes_resident(), 60u);
  EXPECT_EQ(store.evictions(), 0u);
  EXPECT_FALSE(store.info("b"));
  EXPECT_TRUE(store.list(true).size() == 1u) << "nothing was evicted";

  // What fits still goes in.
  EXPECT_TRUE(store.insert("c", factors_of(40)).empty());
  EXPECT_EQ(store.bytes_resident(), 100u);
}

TEST(FactorStore, ImageLargerThanTheWholeBudgetIsRejectedUnderEitherPolicy) {
  for (FullStoreAction action : {FullStoreAction::evict_lru, FullStoreAction::reject}) {
    FactorStore store(fakes::factors_only_limits(kBudget, action, kHistory));
    (void)store.insert("small", factors_of(10));
    const std::string message =
        error_message<ResourceExhausted>([&] { (void)store.insert("huge", factors_of(101)); });
    EXPECT_NE(message.find("more than the whole memory budget"), std::string::npos) << message;
    EXPECT_EQ(resident_ids(store), (Ids{"small"})) << "nothing may be evicted for a lost cause";
    EXPECT_EQ(store.evictions(), 0u);
    EXPECT_FALSE(store.info("huge"));
  }
}

TEST(FactorStore, InsertingAnExistingIdReplacesItsFactors) {
  for (FullStoreAction action : {FullStoreAction::evict_lru, FullStoreAction::reject}) {
    FactorStore store(fakes::factors_only_limits(kBudget, action, kHistory));
    (void)store.insert("a", factors_of(40));
    (void)store.insert("b", factors_of(40));
    // 40 + 60 fits once a's old 40 bytes are freed: no eviction, no rejection.
    const auto replacement = factors_of(60, 7);
    EXPECT_TRUE(store.insert("a", replacement).empty());
    EXPECT_EQ(store.peek("a"), replacement);
    EXPECT_EQ(store.info("a")->rank_kept, 7u);
    EXPECT_EQ(store.bytes_resident(), 100u);
    EXPECT_EQ(store.images_resident(), 2u);
    EXPECT_EQ(resident_ids(store), (Ids{"a", "b"})) << "the replacement is the newest";
    EXPECT_EQ(store.evictions(), 0u);
  }
}

TEST(FactorStore, EvictedIdsAreRememberedAndFindSaysSo) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory));
  (void)store.insert("old", factors_of(60, 5));
  EXPECT_EQ(store.insert("new", factors_of(60)), (Ids{"old"}));

  const auto info = store.info("old");
  ASSERT_TRUE(info);
  EXPECT_FALSE(info->resident);
  EXPECT_EQ(info->bytes, 0u);
  EXPECT_EQ(info->shape, kShape);
  EXPECT_EQ(info->rank_kept, 5u);
  EXPECT_EQ(store.peek("old"), nullptr);

  EXPECT_EQ(resident_ids(store), (Ids{"new"}));
  const auto all = store.list(true);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "new");
  EXPECT_TRUE(all[0].resident);
  EXPECT_EQ(all[1].id, "old");
  EXPECT_FALSE(all[1].resident);

  const std::string evicted = error_message<NotFound>([&] { (void)store.find("old"); });
  EXPECT_NE(evicted.find("evicted"), std::string::npos) << evicted;
  const std::string unknown = error_message<NotFound>([&] { (void)store.find("never"); });
  EXPECT_EQ(unknown.find("evicted"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("'never'"), std::string::npos) << unknown;

  // Decomposing it again makes it resident and forgets the eviction.
  EXPECT_EQ(store.insert("old", factors_of(40)), Ids{});
  EXPECT_TRUE(store.info("old")->resident);
  EXPECT_EQ(store.list(true).size(), 2u);
  EXPECT_NE(store.find("old"), nullptr);
}

TEST(FactorStore, EraseFreesResidentAndForgetsEvicted) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory));
  (void)store.insert("a", factors_of(60));
  (void)store.insert("b", factors_of(30));
  EXPECT_EQ(store.insert("c", factors_of(60)), (Ids{"a"}));

  EXPECT_EQ(store.erase("b"), 30u);
  EXPECT_EQ(store.bytes_resident(), 60u);
  EXPECT_EQ(resident_ids(store), (Ids{"c"}));
  EXPECT_FALSE(store.info("b"));
  EXPECT_THROW((void)store.find("b"), NotFound);

  EXPECT_EQ(store.erase("a"), 0u) << "an evicted image holds no bytes";
  EXPECT_FALSE(store.info("a"));
  EXPECT_EQ(store.list(true).size(), 1u);

  EXPECT_THROW((void)store.erase("a"), NotFound);
  EXPECT_THROW((void)store.erase("never"), NotFound);
  EXPECT_EQ(store.bytes_resident(), 60u);
}

TEST(FactorStore, EvictedHistoryIsBounded) {
  constexpr std::size_t kSmallHistory = 2;
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kSmallHistory));
  for (const char* id : {"a", "b", "c", "d", "e"}) (void)store.insert(id, factors_of(kBudget));
  EXPECT_EQ(store.evictions(), 4u);

  Ids evicted;
  for (const auto& info : store.list(true)) {
    if (!info.resident) evicted.push_back(info.id);
  }
  EXPECT_EQ(evicted, (Ids{"d", "c"})) << "newest evictions first, oldest forgotten";
  EXPECT_FALSE(store.info("a"));
  EXPECT_FALSE(store.info("b"));
  const std::string forgotten = error_message<NotFound>([&] { (void)store.find("a"); });
  EXPECT_EQ(forgotten.find("evicted"), std::string::npos) << forgotten;
}

TEST(FactorStore, ZeroHistoryRemembersNothing) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, 0));
  (void)store.insert("a", factors_of(kBudget));
  EXPECT_EQ(store.insert("b", factors_of(kBudget)), (Ids{"a"}));
  EXPECT_FALSE(store.info("a"));
  EXPECT_EQ(store.list(true).size(), 1u);
}

TEST(FactorStore, ConcurrentUseKeepsTheBudget) {
  constexpr std::size_t kThreads = 4;
  constexpr int kOperations = 2000;
  FactorStore store(fakes::factors_only_limits(1000, FullStoreAction::evict_lru, 16));
  std::atomic<int> not_found{0};
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kOperations; ++i) {
        const std::string id = std::to_string((static_cast<int>(t) * 7 + i) % 40);
        if (i % 3 == 0) {
          try {
            (void)store.find(id);
          } catch (const NotFound&) {
            ++not_found;
          }
        } else {
          (void)store.insert(id, factors_of(50 + static_cast<std::size_t>(i % 5) * 10));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  std::size_t listed_bytes = 0;
  for (const auto& info : store.list(false)) listed_bytes += info.bytes;
  EXPECT_LE(store.bytes_resident(), store.budget_bytes());
  EXPECT_EQ(listed_bytes, store.bytes_resident());
  EXPECT_EQ(store.list(false).size(), store.images_resident());
}

// The budget counts what an image holds besides its factors: its entry and its id.
TEST(FactorStore, EachImageCountsItsEntryAndIdBesideItsFactors) {
  FactorStoreLimits limits;  // the measured entry cost
  limits.budget_bytes = 1 << 20;
  FactorStore store(limits);
  const std::string id(256, 'i');
  const auto factors = factors_of(100);
  const std::size_t expected =
      100 + limits.entry_cost.bytes + limits.entry_cost.bytes_per_id_byte * id.size();
  EXPECT_GT(expected, 100 + 2 * id.size());
  EXPECT_EQ(store.counted_bytes(id, *factors), expected);
  (void)store.insert(id, factors);
  EXPECT_EQ(store.bytes_resident(), expected);
  EXPECT_EQ(store.info(id)->bytes, expected);
  EXPECT_EQ(store.erase(id), expected);
  EXPECT_EQ(store.bytes_resident(), 0u);
}

TEST(FactorStore, ManyTinyImagesAreEvictedForTheirEntries) {
  FactorStoreLimits limits;  // the measured entry cost
  limits.budget_bytes = 64 * 1024;
  limits.evicted_history = 0;
  FactorStore store(limits);
  for (int i = 0; i < 1000; ++i) (void)store.insert(std::to_string(i), factors_of(12));
  EXPECT_LE(store.bytes_resident(), limits.budget_bytes);
  EXPECT_LT(store.images_resident(), 64u) << "at least 1 KiB an image, whatever its factors";
  EXPECT_EQ(store.evictions(), 1000u - store.images_resident());
}

TEST(FactorStore, MaxImagesEvictsTheLeastRecentlyUsed) {
  FactorStoreLimits limits = fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory);
  limits.max_images = 3;
  FactorStore store(limits);
  for (const char* id : {"a", "b", "c"}) (void)store.insert(id, factors_of(1));
  (void)store.find("a");
  EXPECT_EQ(store.insert("d", factors_of(1)), (Ids{"b"}));
  EXPECT_EQ(resident_ids(store), (Ids{"d", "a", "c"}));
  EXPECT_TRUE(store.insert("a", factors_of(2)).empty()) << "a replacement adds no image";
  EXPECT_EQ(store.images_resident(), 3u);
}

TEST(FactorStore, MaxImagesRejectsUnderTheRejectPolicy) {
  FactorStoreLimits limits = fakes::factors_only_limits(kBudget, FullStoreAction::reject, kHistory);
  limits.max_images = 2;
  FactorStore store(limits);
  (void)store.insert("a", factors_of(1));
  (void)store.insert("b", factors_of(1));
  const std::string message =
      error_message<ResourceExhausted>([&] { (void)store.insert("c", factors_of(1)); });
  EXPECT_NE(message.find("max_images (2)"), std::string::npos) << message;
  EXPECT_EQ(resident_ids(store), (Ids{"b", "a"}));
  EXPECT_TRUE(store.insert("a", factors_of(5)).empty()) << "a replacement adds no image";
}

Ids page_ids(const StoredImagePage& page) {
  Ids ids;
  for (const auto& info : page.images) ids.push_back(info.id);
  return ids;
}

TEST(FactorStore, PagesGoInIdOrderFromTheLastIdOfThePageBefore) {
  FactorStore store(fakes::factors_only_limits(kBudget, FullStoreAction::evict_lru, kHistory));
  for (const char* id : {"d", "b", "a", "c", "e"}) (void)store.insert(id, factors_of(20));
  (void)store.find("a");
  (void)store.find("d");
  EXPECT_EQ(store.insert("f", factors_of(20)), (Ids{"b"}));  // the least recently used

  StoredImagePage first = store.list_page("", 2, false);
  EXPECT_EQ(page_ids(first), (Ids{"a", "c"}));
  EXPECT_EQ(first.next_after, "c");
  // Images that come and go between pages do not shift the next one.
  (void)store.erase("d");
  (void)store.insert("aa", factors_of(1));
  StoredImagePage second = store.list_page(first.next_after, 2, false);
  EXPECT_EQ(page_ids(second), (Ids{"e", "f"}));
  EXPECT_EQ(second.next_after, "") << "nothing follows";

  StoredImagePage with_evicted = store.list_page("", 10, true);
  EXPECT_EQ(page_ids(with_evicted), (Ids{"a", "aa", "b", "c", "e", "f"}));
  EXPECT_FALSE(with_evicted.images[2].resident);
  EXPECT_EQ(with_evicted.next_after, "");
  EXPECT_TRUE(store.list_page("f", 10, true).images.empty());
}

// A namespace's page: only ids with its prefix, resident and evicted, in id order, and a next
// page only while ids with the prefix follow.
TEST(FactorStore, PagesOfOnePrefix) {
  FactorStore store(fakes::factors_only_limits(70, FullStoreAction::evict_lru, kHistory));
  for (const char* id : {"a/1", "a/2", "a/3", "ab/1", "b/1", "b/2", "z"}) {
    (void)store.insert(id, factors_of(10));
  }
  (void)store.insert("a/4", factors_of(10));  // evicts a/1, the least recently used

  EXPECT_EQ(page_ids(store.list_page("", 10, false, "a/")), (Ids{"a/2", "a/3", "a/4"}));
  EXPECT_EQ(page_ids(store.list_page("", 10, true, "a/")), (Ids{"a/1", "a/2", "a/3", "a/4"}));
  EXPECT_EQ(page_ids(store.list_page("", 10, false, "b/")), (Ids{"b/1", "b/2"}));
  EXPECT_TRUE(store.list_page("", 10, true, "c/").images.empty());

  const StoredImagePage first = store.list_page("", 2, true, "a/");
  EXPECT_EQ(page_ids(first), (Ids{"a/1", "a/2"}));
  EXPECT_EQ(first.next_after, "a/2");
  const StoredImagePage last = store.list_page(first.next_after, 2, true, "a/");
  EXPECT_EQ(page_ids(last), (Ids{"a/3", "a/4"}));
  EXPECT_EQ(last.next_after, "") << "ab/1 follows, but not under a/";
}

// Two devices of 100 bytes each, as a two-GPU server's store.
FactorStore two_device_store(FullStoreAction when_full = FullStoreAction::evict_lru) {
  FactorStoreLimits limits = fakes::factors_only_limits(0, when_full, kHistory);
  limits.device_budget_bytes = {kBudget, kBudget};
  return FactorStore(limits);
}

std::shared_ptr<const Factors> on_device(std::size_t device, std::size_t bytes) {
  return fakes::make_test_factors(kShape, 4, bytes, device);
}

TEST(FactorStore, EachDeviceEvictsItsOwnLeastRecentlyUsedImages) {
  FactorStore store = two_device_store();
  EXPECT_EQ(store.budget_bytes(), 2 * kBudget);
  EXPECT_TRUE(store.insert("a0", on_device(0, 60)).empty());
  EXPECT_TRUE(store.insert("b1", on_device(1, 60)).empty());
  EXPECT_TRUE(store.insert("c1", on_device(1, 40)).empty()) << "device 1 is exactly full";
  // The oldest image of all is a0 (device 0); device 1 makes room from its own.
  EXPECT_EQ(store.insert("d1", on_device(1, 30)), Ids{"b1"});
  EXPECT_TRUE(store.info("a0")->resident);
  EXPECT_EQ(store.info("d1")->device, 1u);
  const std::vector<DeviceUsage> usage = store.device_usage();
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[0].images, 1u);
  EXPECT_EQ(usage[0].bytes, 60u);
  EXPECT_EQ(usage[1].images, 2u);
  EXPECT_EQ(usage[1].bytes, 70u);
  EXPECT_EQ(usage[1].budget_bytes, kBudget);
  EXPECT_EQ(store.bytes_resident(), 130u);
  EXPECT_EQ(store.evictions(), 1u);
}

TEST(FactorStore, ABudgetIsPerDevice) {
  FactorStore store = two_device_store(FullStoreAction::reject);
  (void)store.insert("a0", on_device(0, 90));
  (void)store.insert("b1", on_device(1, 90));  // fits: device 1 is empty
  const std::string message =
      error_message<ResourceExhausted>([&] { (void)store.insert("c0", on_device(0, 20)); });
  EXPECT_NE(message.find("on device 0"), std::string::npos) << message;
  EXPECT_NE(error_message<ResourceExhausted>([&] { (void)store.insert("big", on_device(1, 101)); })
                .find("more than the whole memory budget of 100"),
            std::string::npos);
  // A replacement moving to another device frees its bytes on the first.
  (void)store.erase("b1");
  (void)store.insert("a0", on_device(1, 90));
  EXPECT_EQ(store.device_usage()[0].bytes, 0u);
  EXPECT_EQ(store.device_usage()[1].bytes, 90u);
}

TEST(FactorStore, DroppingADeviceLetsGoOfItsImagesOnly) {
  FactorStore store = two_device_store();
  (void)store.insert("a0", on_device(0, 10));
  (void)store.insert("b1", on_device(1, 10));
  (void)store.insert("c1", on_device(1, 10));
  StoredImageInfo stored;
  stored.id = "c1";
  store.remember_stored(stored);
  EXPECT_EQ(store.drop_device(1), 2u);
  EXPECT_EQ(store.images_resident(), 1u);
  EXPECT_TRUE(store.info("a0")->resident);
  EXPECT_FALSE(store.info("b1")->resident);
  EXPECT_FALSE(store.info("c1")->resident);
  EXPECT_TRUE(store.info("c1")->stored) << "the repository still holds it";
  EXPECT_NE(error_message<NotFound>([&] { (void)store.find("b1"); })
                .find("was on a device that failed, and no repository holds it"),
            std::string::npos);
  EXPECT_EQ(store.device_usage()[1].images, 0u);
  EXPECT_EQ(store.device_usage()[1].bytes, 0u);
  EXPECT_EQ(store.evictions(), 0u) << "a failed device is not the budget's doing";
  EXPECT_TRUE(store.device_usage()[1].dropped);
  EXPECT_THROW((void)store.insert("late", on_device(1, 10)), Unavailable)
      << "made on the device before it failed";
  EXPECT_THROW((void)store.insert_loaded("late", on_device(1, 10)), Unavailable);
  EXPECT_NO_THROW((void)store.insert("late", on_device(0, 10)));
  EXPECT_EQ(store.drop_device(1), 0u);
  EXPECT_EQ(store.drop_device(7), 0u);
}

TEST(FactorStore, FactorsOfADeviceTheStoreDoesNotHaveAreRefused) {
  FactorStore store = two_device_store();
  EXPECT_THROW((void)store.insert("x", on_device(2, 10)), InternalError);
}

}  // namespace
}  // namespace svdserve
