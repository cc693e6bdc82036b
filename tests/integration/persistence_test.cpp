// Factors outlive the process: the real server binary with a data folder, killed with SIGKILL in
// the middle of a burst of uploads and started again on the same folder. Every upload it
// answered must reconstruct with the same pixels; a full disk is a clear error that loses
// nothing already answered; a damaged entry is skipped, never served.
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "../client/temp_folder.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/test_paths.hpp"

namespace svdserve::testing {
namespace {

constexpr uint32_t kMaxRank = 24;
constexpr uint32_t kRank = 16;

const char* const kImages[] = {"aero1.jpg", "butterfly.jpg", "home.jpg", "gradient.png"};

class PersistenceTest : public ::testing::Test {
 protected:
  [[nodiscard]] v1::ServerConfig config(const std::filesystem::path& data_dir) const {
    v1::ServerConfig config = test_config();
    config.set_durability(v1::DURABILITY_SYNC);
    config.set_data_dir(data_dir.string());
    config.set_log_level("info");
    return config;
  }

  // The pixels of `id` at kRank, or empty when the call failed.
  static std::string pixels_of(const Client& client, const std::string& id) {
    auto answer = client.reconstruct(id, Rank{kRank});
    return answer.ok() ? answer->pixels() : std::string();
  }

  TempFolder data_{"persistence"};
};

TEST_F(PersistenceTest, EveryAnsweredUploadSurvivesSigkillMidBurst) {
  std::vector<std::string> images;
  for (const char* name : kImages) images.push_back(read_test_image(name));

  std::mutex mutex;
  std::condition_variable answered_more;
  std::map<std::string, std::string> answered;  // id -> pixels seen before the kill (or empty)
  std::atomic<int> failed_calls{0};
  {
    ServerProcess server(config(data_.path()));
    ASSERT_TRUE(server.serving());
    std::vector<std::jthread> uploaders;
    for (int thread = 0; thread < 3; ++thread) {
      uploaders.emplace_back([&, thread] {
        auto client = server.new_client(std::chrono::seconds(20));
        for (int i = 0; i < 200; ++i) {
          const std::string id = "burst-" + std::to_string(thread) + "-" + std::to_string(i);
          if (!client->decompose(images[(thread + i) % images.size()], kMaxRank, id).ok()) {
            ++failed_calls;
            return;  // the server is gone
          }
          std::string pixels = pixels_of(*client, id);
          std::lock_guard lock(mutex);
          answered[id] = std::move(pixels);
          answered_more.notify_all();
        }
      });
    }
    {
      std::unique_lock lock(mutex);
      ASSERT_TRUE(answered_more.wait_for(lock, std::chrono::seconds(60),
                                         [&] { return answered.size() >= 24; }));
    }
    server.process().signal(SIGKILL);
  }  // the uploaders end on their first failed call

  ASSERT_GE(answered.size(), 24u);
  // No entry is torn: every file in the folder is a whole entry or a writer's temporary.
  ServerProcess restarted(config(data_.path()));
  ASSERT_TRUE(restarted.serving());
  std::size_t identical = 0;
  for (const auto& [id, before] : answered) {
    const std::string after = pixels_of(restarted.client(), id);
    ASSERT_FALSE(after.empty()) << id << " was answered, then lost";
    if (!before.empty()) {
      EXPECT_EQ(after, before) << id;
      ++identical;
    }
  }
  const auto listed = restarted.client().list_images();
  ASSERT_TRUE(listed.ok());
  EXPECT_GE(static_cast<std::size_t>(listed->images_size()), answered.size());
  std::printf("[ persistence ] %zu uploads answered before SIGKILL, %zu reconstructed identically "
              "after the restart, all %zu reconstruct; %d calls failed at the kill\n",
              answered.size(), identical, answered.size(), failed_calls.load());
  RecordProperty("answered_before_kill", static_cast<int>(answered.size()));
}

TEST_F(PersistenceTest, DeletedImageStaysDeletedAndEvictedOneComesBack) {
  v1::ServerConfig small = config(data_.path());
  small.set_memory_budget_bytes(400u << 10);  // one 512x512 RGB image at rank 24 (0.3 MB)
  const std::string image = read_test_image("baboon.jpg");
  {
    ServerProcess server(small);
    ASSERT_TRUE(server.serving());
    for (const char* id : {"first", "second", "third"}) {
      ASSERT_TRUE(server.client().decompose(image, kMaxRank, id).ok()) << id;
    }
    const auto info = server.client().get_image("first");
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->info().state(), v1::IMAGE_STATE_STORED);  // evicted from memory, kept
    EXPECT_FALSE(pixels_of(server.client(), "first").empty());
    // Three writes, one miss that loaded "first" from the folder, the bytes both ways.
    const std::string metrics = server.metrics();
    EXPECT_EQ(metric_sample(metrics, "svdserve_repository_writes_total{outcome=\"ok\"}"), 3)
        << metrics;
    EXPECT_EQ(metric_sample(metrics, "svdserve_factor_cache_lookups_total{result=\"miss\"}"), 1);
    EXPECT_EQ(metric_sample(metrics, "svdserve_repository_loads_total{outcome=\"ok\"}"), 1);
    EXPECT_GT(metric_sample(metrics, "svdserve_repository_bytes_total{direction=\"read\"}"),
              295'000);  // one 512x512 RGB entry at rank 24
    EXPECT_GT(metric_sample(metrics, "svdserve_repository_load_seconds"), 0);
    ASSERT_TRUE(server.client().delete_image("second").ok());
    EXPECT_EQ(server.stop().exit_code, 0);
  }
  ServerProcess restarted(small);
  ASSERT_TRUE(restarted.serving());
  EXPECT_EQ(restarted.client().get_image("second").status().error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(pixels_of(restarted.client(), "first").empty());
  EXPECT_FALSE(pixels_of(restarted.client(), "third").empty());
}

TEST_F(PersistenceTest, LoadDirectoryIsKeptLikeDecompose) {
  TempFolder photos("persistence_photos");
  std::filesystem::copy_file(std::string(svdserve::test::test_images_dir()) + "/home.jpg",
                             photos.path() / "home.jpg");
  std::filesystem::copy_file(std::string(svdserve::test::test_images_dir()) + "/fruits.jpg",
                             photos.path() / "fruits.jpg");
  v1::ServerConfig with_root = config(data_.path());
  const std::string root = std::filesystem::canonical(photos.path()).string();
  with_root.add_load_roots(root);
  {
    ServerProcess server(with_root);
    ASSERT_TRUE(server.serving());
    const auto loaded = server.client().load_directory(root, kMaxRank);
    ASSERT_TRUE(loaded.ok()) << loaded.status().error_message();
    EXPECT_EQ(loaded->loaded(), 2u);
    server.process().signal(SIGKILL);
  }
  ServerProcess restarted(config(data_.path()));
  ASSERT_TRUE(restarted.serving());
  EXPECT_FALSE(pixels_of(restarted.client(), "home.jpg").empty());
  EXPECT_FALSE(pixels_of(restarted.client(), "fruits.jpg").empty());
}

TEST_F(PersistenceTest, DamagedEntryIsSkippedAtStartAndNeverServed) {
  const std::string image = read_test_image("home.jpg");
  {
    ServerProcess server(config(data_.path()));
    ASSERT_TRUE(server.serving());
    ASSERT_TRUE(server.client().decompose(image, kMaxRank, "kept").ok());
    ASSERT_TRUE(server.client().decompose(image, kMaxRank, "torn").ok());
  }
  for (const auto& entry : std::filesystem::directory_iterator(data_.path())) {
    // The second-written file, torn as a crash in the middle of a copy would leave it.
    std::string bytes = read_file_bytes(entry.path().string());
    if (bytes.find("torn") != std::string::npos) {
      std::filesystem::resize_file(entry.path(), bytes.size() - 1000);
    }
  }
  ServerProcess restarted(config(data_.path()));
  ASSERT_TRUE(restarted.serving());
  EXPECT_FALSE(pixels_of(restarted.client(), "kept").empty());
  const auto torn = restarted.client().reconstruct("torn", Rank{kRank});
  EXPECT_EQ(torn.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(torn.status().error_message().find(data_.path().string()), std::string::npos);
}

// A folder of a few MiB on its own tmpfs: writes fail with ENOSPC as on a full disk.
class SmallFilesystem {
 public:
  explicit SmallFilesystem(const std::filesystem::path& where, const char* size)
      : where_(where) {
    mounted_ = ::mount("tmpfs", where.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) == 0;
  }
  ~SmallFilesystem() {
    if (mounted_) ::umount2(where_.c_str(), MNT_DETACH);
  }
  [[nodiscard]] bool mounted() const noexcept { return mounted_; }

 private:
  std::filesystem::path where_;
  bool mounted_ = false;
};

TEST_F(PersistenceTest, FullDiskIsAClearErrorAndLosesNothingAnswered) {
  const std::filesystem::path data = data_.path() / "small";
  std::filesystem::create_directory(data);
  SmallFilesystem disk(data, "4m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  const std::string image = read_test_image("baboon.jpg");  // 512x512 RGB: 1.2 MB at rank 100
  std::vector<std::string> answered;
  grpc::Status refusal;
  {
    ServerProcess server(config(data));
    ASSERT_TRUE(server.serving());
    for (int i = 0; i < 10 && refusal.ok(); ++i) {
      const std::string id = "full-" + std::to_string(i);
      auto result = server.client().decompose(image, 100, id);
      if (result.ok()) {
        answered.push_back(id);
      } else {
        refusal = result.status();
        EXPECT_EQ(server.client().get_image(id).status().error_code(),
                  grpc::StatusCode::NOT_FOUND) << "refused, yet kept";
      }
    }
    ASSERT_FALSE(refusal.ok()) << "4 MiB took 10 images";
    EXPECT_EQ(refusal.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(refusal.error_message().find("full"), std::string::npos) << refusal.error_message();
    EXPECT_EQ(refusal.error_message().find(data.string()), std::string::npos);
    // Still serving what it answered.
    for (const std::string& id : answered) EXPECT_FALSE(pixels_of(server.client(), id).empty());
  }
  ASSERT_FALSE(answered.empty());
  ServerProcess restarted(config(data));
  ASSERT_TRUE(restarted.serving());
  for (const std::string& id : answered) {
    EXPECT_FALSE(pixels_of(restarted.client(), id).empty()) << id;
  }
}

}  // namespace
}  // namespace svdserve::testing
