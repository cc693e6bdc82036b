// The factor store as a cache of a real folder repository, on the real CPU backend: what was
// persisted comes back from the folder after an eviction or in a new process's cache with the
// same pixels; damaged entries are refused; deletes reach the folder; at open, the newest images
// are loaded up to the budget.
#include "server/repository/factor_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>

#include "../../client/temp_folder.hpp"
#include "kernels/multi_device_backend.hpp"
#include "server/repository/directory_repository.hpp"

namespace svdserve {
namespace {

ImageF32 random_image(ImageShape shape, uint32_t seed) {
  ImageF32 image{.shape = shape, .planes = std::vector<float>(shape.values())};
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> sample(0.0f, 255.0f);
  for (float& value : image.planes) value = sample(random);
  return image;
}

FactorStoreLimits limits_of(std::size_t budget_bytes) {
  FactorStoreLimits limits;
  limits.budget_bytes = budget_bytes;
  return limits;
}

// A store and its cache over a folder repository, as one server process holds them.
struct CacheOverFolder {
  CacheOverFolder(Backend& backend, const std::filesystem::path& folder, std::size_t budget_bytes,
                  Durability durability = Durability::sync)
      : store(limits_of(budget_bytes)),
        cache(store, backend, std::make_unique<DirectoryRepository>(folder),
              FactorCacheOptions{.durability = durability}) {}
  FactorStore store;
  FactorCache cache;
};

class FactorCacheTest : public ::testing::Test {
 protected:
  static constexpr ImageShape kShape{48, 40, 3};
  static constexpr uint32_t kRank = 12;

  std::shared_ptr<const Factors> decompose(uint32_t seed) {
    const ImageF32 image = random_image(kShape, seed);
    const ImageF32* images[] = {&image};
    return backend_->decompose(std::span<const ImageF32* const>(images), kRank).front();
  }

  std::vector<std::byte> reconstruct(const Factors& factors) {
    return reconstruct_on(*backend_, factors);
  }
  static std::vector<std::byte> reconstruct_on(Backend& backend, const Factors& factors) {
    std::vector<std::byte> pixels(kShape.values());
    const ReconstructItem item{&factors, kRank, OutputPixels::u8, pixels};
    backend.reconstruct(std::span(&item, 1));
    return pixels;
  }

  // Persists and waits for the answer.
  static void persist(CacheOverFolder& stack, const std::string& id,
                      std::shared_ptr<const Factors> factors) {
    persist_into(stack.store, stack.cache, id, std::move(factors));
  }
  static void persist_into(FactorStore& store, FactorCache& cache, const std::string& id,
                           std::shared_ptr<const Factors> factors) {
    (void)store.insert(id, factors);
    std::promise<void> answered;
    cache.persist(id, std::move(factors), [&](std::exception_ptr error) {
      if (error) {
        answered.set_exception(error);
      } else {
        answered.set_value();
      }
    });
    answered.get_future().get();
  }

  // Room for `images` images of kShape at kRank.
  [[nodiscard]] std::size_t budget_for(std::size_t images) {
    return images * (factor_bytes_f32(kShape, kRank) + 8192);
  }

  svdserve::testing::TempFolder folder_{"factor_cache"};
  std::unique_ptr<Backend> backend_ = make_cpu_backend({.threads = 2});
};

TEST_F(FactorCacheTest, EvictedImageIsLoadedBackWithTheSamePixels) {
  CacheOverFolder stack(*backend_, folder_.path(), budget_for(1));
  const auto first = decompose(1);
  const auto original_pixels = reconstruct(*first);
  persist(stack, "first", first);
  EXPECT_TRUE(stack.store.info("first")->stored);
  persist(stack, "second", decompose(2));  // evicts "first" from memory
  ASSERT_FALSE(stack.store.info("first")->resident);
  EXPECT_TRUE(stack.store.info("first")->stored);

  const auto loaded = stack.cache.find("first");
  EXPECT_EQ(reconstruct(*loaded), original_pixels);
  EXPECT_TRUE(stack.store.info("first")->resident);
  const RepositoryCounters counters = stack.cache.counters();
  EXPECT_EQ(counters.misses, 1u);
  EXPECT_EQ(counters.loads, 1u);
  EXPECT_EQ(counters.writes, 2u);
  EXPECT_GT(counters.bytes_read, factor_bytes_f32(kShape, kRank));
  (void)stack.cache.find("first");
  EXPECT_EQ(stack.cache.counters().hits, 1u);
}

TEST_F(FactorCacheTest, AnotherProcessesCacheOpensTheFolderAndWarmsTheNewest) {
  std::vector<std::vector<std::byte>> pixels;
  {
    CacheOverFolder writer(*backend_, folder_.path(), budget_for(8));
    for (uint32_t i = 0; i < 4; ++i) {
      const auto factors = decompose(10 + i);
      pixels.push_back(reconstruct(*factors));
      persist(writer, "img" + std::to_string(i), factors);
    }
  }
  // Newest last: img3, then img2 fit in a budget of two.
  CacheOverFolder reader(*backend_, folder_.path(), budget_for(2));
  const RepositoryIndex index = reader.cache.open();
  EXPECT_EQ(index.images, 4u);
  EXPECT_EQ(index.skipped, 0u);
  EXPECT_EQ(index.loaded, 2u);
  EXPECT_EQ(reader.store.images_resident(), 2u);
  EXPECT_EQ(reader.store.list_page("", 10, false).images.size(), 4u);  // stored ones listed
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(reconstruct(*reader.cache.find("img" + std::to_string(i))), pixels[i]) << i;
  }
}

TEST_F(FactorCacheTest, DamagedEntriesAreSkippedAtOpenAndRefusedOnUse) {
  {
    CacheOverFolder writer(*backend_, folder_.path(), budget_for(4));
    persist(writer, "good", decompose(1));
    persist(writer, "truncated", decompose(2));
    persist(writer, "flipped", decompose(3));
  }
  const auto path_of = [&](const std::string& id) {
    return folder_.path() / DirectoryRepository::file_name(id);
  };
  std::filesystem::resize_file(path_of("truncated"),
                               std::filesystem::file_size(path_of("truncated")) / 2);
  {
    std::fstream file(path_of("flipped"), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(2000);
    file.put('\x55');
  }
  CacheOverFolder reader(*backend_, folder_.path(), budget_for(4));
  const RepositoryIndex index = reader.cache.open();
  EXPECT_EQ(index.skipped, 1u);  // the truncated one: its size disagrees with its header
  EXPECT_EQ(index.images, 2u);
  (void)reader.cache.find("good");
  for (const char* id : {"truncated", "flipped"}) {
    try {
      (void)reader.cache.find(id);
      ADD_FAILURE() << id << " was served";
    } catch (const NotFound& error) {
      EXPECT_NE(std::string(error.what()).find("damaged"), std::string::npos) << error.what();
    }
  }
  // The truncated one at open; the flipped one when warming and when asked; the truncated one
  // when asked.
  EXPECT_EQ(reader.cache.counters().corrupt_entries, 4u);
}

TEST_F(FactorCacheTest, EraseReachesTheFolderEvenWhenOnlyTheFolderHasIt) {
  CacheOverFolder stack(*backend_, folder_.path(), budget_for(1));
  persist(stack, "a", decompose(1));
  persist(stack, "b", decompose(2));  // "a" leaves memory
  EXPECT_EQ(stack.cache.erase("a"), 0u);
  EXPECT_FALSE(std::filesystem::exists(folder_.path() / DirectoryRepository::file_name("a")));
  EXPECT_THROW((void)stack.cache.find("a"), NotFound);
  EXPECT_THROW((void)stack.cache.erase("a"), NotFound);
  EXPECT_GT(stack.cache.erase("b"), 0u);
}

TEST_F(FactorCacheTest, AsyncAnswersAtOnceAndCloseFinishesTheWrites) {
  CacheOverFolder stack(*backend_, folder_.path(), budget_for(16), Durability::async);
  for (uint32_t i = 0; i < 8; ++i) persist(stack, "a" + std::to_string(i), decompose(i));
  stack.cache.close();
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_TRUE(std::filesystem::exists(folder_.path() /
                                        DirectoryRepository::file_name("a" + std::to_string(i))));
  }
  EXPECT_EQ(stack.cache.counters().writes, 8u);
  EXPECT_EQ(stack.cache.counters().writes_queued, 0u);
}

// The folder repository, but a get holds its bytes until the test lets it go on: a delete can
// then come between the read of an entry and its arrival in memory.
class HeldGets final : public FactorRepository {
 public:
  explicit HeldGets(const std::filesystem::path& folder) : folder_(folder) {}
  std::string describe() const override { return folder_.describe(); }
  void put(const std::string& id, std::string_view encoded) override { folder_.put(id, encoded); }
  std::optional<std::string> get(const std::string& id) override {
    auto bytes = folder_.get(id);
    read_.set_value();
    go_on_.get_future().wait();
    return bytes;
  }
  bool erase(const std::string& id) override { return folder_.erase(id); }
  void scan(std::size_t head_bytes,
            const std::function<void(const RepositoryEntryHead&)>& visit) override {
    folder_.scan(head_bytes, visit);
  }
  std::promise<void> read_, go_on_;

 private:
  DirectoryRepository folder_;
};

TEST_F(FactorCacheTest, ADeleteDuringALoadLeavesNothingInMemory) {
  FactorStore store(limits_of(budget_for(1)));
  auto held = std::make_unique<HeldGets>(folder_.path());
  HeldGets& gets = *held;
  FactorCache cache(store, *backend_, std::move(held), FactorCacheOptions{});
  persist_into(store, cache, "deleted", decompose(1));
  persist_into(store, cache, "other", decompose(2));  // "deleted" leaves memory
  auto loading = std::async(std::launch::async, [&] { return cache.find("deleted"); });
  gets.read_.get_future().wait();  // the entry is read, not yet in memory
  EXPECT_EQ(cache.erase("deleted"), 0u);
  gets.go_on_.set_value();
  EXPECT_THROW((void)loading.get(), NotFound);
  EXPECT_FALSE(store.info("deleted").has_value());
  EXPECT_EQ(store.peek("deleted"), nullptr);
}

TEST_F(FactorCacheTest, ALoadNeverReplacesANewerDecomposeOfTheId) {
  FactorStore store(limits_of(budget_for(2)));
  auto held = std::make_unique<HeldGets>(folder_.path());
  HeldGets& gets = *held;
  FactorCache cache(store, *backend_, std::move(held), FactorCacheOptions{});
  persist_into(store, cache, "x", decompose(1));
  (void)store.erase("x");  // only the folder has the first version now
  auto loading = std::async(std::launch::async, [&] { return cache.find("x"); });
  gets.read_.get_future().wait();  // the first version is read
  const auto newer = decompose(2);
  (void)store.insert("x", newer);  // a Decompose of the id lands meanwhile
  gets.go_on_.set_value();
  EXPECT_EQ(loading.get(), newer);
  EXPECT_EQ(store.peek("x"), newer);
}

TEST_F(FactorCacheTest, ManyCallersOfOneMissingImageShareOneLoad) {
  CacheOverFolder stack(*backend_, folder_.path(), budget_for(1));
  persist(stack, "shared", decompose(1));
  persist(stack, "other", decompose(2));
  std::vector<std::future<std::shared_ptr<const Factors>>> callers;
  for (int i = 0; i < 8; ++i) {
    callers.push_back(std::async(std::launch::async, [&] { return stack.cache.find("shared"); }));
  }
  std::set<const Factors*> distinct;
  for (auto& caller : callers) distinct.insert(caller.get().get());
  EXPECT_EQ(stack.cache.counters().loads, 1u);
  EXPECT_EQ(distinct.size(), 1u);
}

// A server over two devices: when one fails, its images leave memory (the server's failure
// handler drops them) and the next use reloads them from the folder onto the other device, with
// the same pixels; images that were only in memory there are gone, not wrong.
TEST_F(FactorCacheTest, ImagesOfAFailedDeviceReloadOntoAnotherWithTheSamePixels) {
  std::vector<std::unique_ptr<Backend>> devices;
  devices.push_back(make_cpu_backend({.threads = 1}));
  devices.push_back(make_cpu_backend({.threads = 1}));
  MultiDeviceBackend sharded(std::move(devices));
  FactorStoreLimits limits;
  limits.device_budget_bytes = {budget_for(4), budget_for(4)};
  FactorStore store(limits);
  FactorCache cache(store, sharded, std::make_unique<DirectoryRepository>(folder_.path()),
                    FactorCacheOptions{});
  sharded.on_device_failure(
      [&](std::size_t device, const std::string&) { (void)store.drop_device(device); });

  std::map<std::string, std::vector<std::byte>> pixels;
  for (uint32_t seed = 0; seed < 4; ++seed) {
    const std::string id = "img" + std::to_string(seed);
    const ImageF32 image = random_image(kShape, seed);
    const ImageF32* images[] = {&image};
    auto factors = sharded.decompose(std::span<const ImageF32* const>(images), kRank).front();
    pixels[id] = reconstruct_on(sharded, *factors);
    persist_into(store, cache, id, std::move(factors));
  }
  ASSERT_EQ(store.device_usage()[1].images, 2u) << "two images on each device";

  sharded.take_out_of_service(1, "test");
  EXPECT_EQ(store.device_usage()[1].images, 0u);
  for (const auto& [id, expected] : pixels) {
    const auto factors = cache.find(id);
    EXPECT_EQ(factors->device(), 0u) << id;
    EXPECT_EQ(reconstruct_on(sharded, *factors), expected) << id;
  }
  EXPECT_EQ(cache.counters().loads, 2u) << "only the failed device's images were read back";
  EXPECT_EQ(store.device_usage()[0].images, 4u);
}

}  // namespace
}  // namespace svdserve
