// Three real servers sharing one data folder behind Debian's nginx, configured by the shipped
// deploy/nginx/svdserve.conf. A mixed workload runs from several threads; one replica is killed
// (SIGKILL) mid-run; every acknowledged image must still reconstruct through nginx, pixel for
// pixel as before, from the survivors, which load it from the shared folder.

#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.hpp"
#include "client/status_text.hpp"
#include "nginx_process.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReplicas = 3;
constexpr std::size_t kThreads = 4;
constexpr std::size_t kSeedImagesPerThread = 8;
constexpr std::uint32_t kImageSide = 32;
constexpr std::uint32_t kMaxRank = 8;
constexpr std::uint32_t kRank = 4;
constexpr std::size_t kNewImagesPerThread = 40;  // Bounds the check of every image at the end.
constexpr std::size_t kCallsBeforeKill = 60;   // Of the mixed workload, all threads together.
constexpr std::size_t kCallsAfterRecovery = 60;
constexpr auto kPhaseTimeout = std::chrono::seconds(30);
constexpr auto kCallTimeout = std::chrono::seconds(30);

v1::DecomposeRequest random_image(std::mt19937& rng, std::string id) {
  std::uniform_int_distribution<int> value(0, 255);
  v1::DecomposeRequest request;
  auto* raw = request.mutable_image()->mutable_raw();
  raw->set_width(kImageSide);
  raw->set_height(kImageSide);
  raw->set_channels(1);
  raw->set_type(v1::PIXEL_TYPE_U8);
  std::string data(std::size_t{kImageSide} * kImageSide, '\0');
  for (char& c : data) c = static_cast<char>(value(rng));
  raw->set_data(std::move(data));
  request.set_id(std::move(id));
  request.set_max_rank(kMaxRank);
  return request;
}

// What the workload saw: the acknowledged images and their reconstructions, the failed calls,
// and when calls about the killed replica's images failed and succeeded again.
class Ledger {
 public:
  void acknowledge(const std::string& id, std::optional<std::string> pixels) {
    const std::scoped_lock lock(mutex_);
    if (!acknowledged_.contains(id)) ids_.push_back(id);
    auto& stored = acknowledged_[id];
    if (!stored) stored = std::move(pixels);
  }

  // A random acknowledged id and its reference pixels (nullopt while none was taken).
  [[nodiscard]] std::optional<std::pair<std::string, std::optional<std::string>>> pick(std::mt19937& rng) const {
    const std::scoped_lock lock(mutex_);
    if (ids_.empty()) return std::nullopt;
    const auto& id = ids_[std::uniform_int_distribution<std::size_t>(0, ids_.size() - 1)(rng)];
    return std::pair{id, acknowledged_.at(id)};
  }

  void mark_kill(std::set<std::string> victim_ids) {
    const std::scoped_lock lock(mutex_);
    victim_ids_ = std::move(victim_ids);
    kill_time_ = Clock::now();
    calls_at_kill_ = calls_;
  }

  // A call that started at `started` ended with `status`. Only calls started after the kill
  // count as answers of the survivors: one answered by the killed replica may end just after.
  void record(const std::string& id, const grpc::Status& status, Clock::time_point started) {
    const bool ok = status.ok();
    const auto now = Clock::now();
    {
      const std::scoped_lock lock(mutex_);
      ++calls_;
      if (!ok) ++failed_by_code_[status.error_code()];
      if (kill_time_ && victim_ids_.contains(id)) {
        if (!ok) {
          ++victim_failures_;
          if (!first_victim_failure_) first_victim_failure_ = now;
        } else if (started >= *kill_time_) {
          ++victim_successes_;
          if (!first_victim_success_) first_victim_success_ = now;
          if (first_victim_failure_ && !recovered_) recovered_ = now;
        }
      }
    }
    changed_.notify_all();
  }

  void note_mismatch() {
    const std::scoped_lock lock(mutex_);
    ++mismatches_;
  }

  [[nodiscard]] bool wait_for_calls(std::size_t calls, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return calls_ >= calls; });
  }

  // After the kill: calls about the killed replica's images succeed again, and `more` calls
  // were made.
  [[nodiscard]] bool wait_for_recovery(std::size_t more, std::chrono::seconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] {
      return victim_served_again() && calls_ >= calls_at_kill_ + more;
    });
  }

  struct Summary {
    std::size_t calls = 0;
    std::size_t failed_calls = 0;
    std::map<grpc::StatusCode, std::size_t> failed_by_code;
    std::size_t mismatches = 0;
    // About the killed replica's images, after the kill:
    bool victim_served_after_kill = false;
    std::size_t victim_successes_after_kill = 0;
    std::size_t victim_failures_after_kill = 0;
    double served_again_ms = -1;  // The kill -> the first success.
    double recovery_ms = 0;       // The first failing call -> the first success after it; 0: none failed.
    std::map<std::string, std::optional<std::string>> acknowledged;
  };

  [[nodiscard]] Summary summary() const {
    const std::scoped_lock lock(mutex_);
    const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
    std::size_t failed_calls = 0;
    for (const auto& [code, count] : failed_by_code_) failed_calls += count;
    Summary summary{.calls = calls_, .failed_calls = failed_calls, .failed_by_code = failed_by_code_,
                    .mismatches = mismatches_,
                    .victim_served_after_kill = victim_served_again(),
                    .victim_successes_after_kill = victim_successes_,
                    .victim_failures_after_kill = victim_failures_,
                    .acknowledged = acknowledged_};
    if (first_victim_success_) summary.served_again_ms = ms(*first_victim_success_ - *kill_time_);
    if (first_victim_failure_ && recovered_) summary.recovery_ms = ms(*recovered_ - *first_victim_failure_);
    return summary;
  }

 private:
  [[nodiscard]] bool victim_served_again() const {  // Holding mutex_.
    return first_victim_success_.has_value() && (!first_victim_failure_ || recovered_);
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // All guarded by mutex_.
  std::map<std::string, std::optional<std::string>> acknowledged_;
  std::vector<std::string> ids_;
  std::size_t calls_ = 0;
  std::map<grpc::StatusCode, std::size_t> failed_by_code_;
  std::size_t mismatches_ = 0;
  std::size_t calls_at_kill_ = 0;
  std::set<std::string> victim_ids_;
  std::optional<Clock::time_point> kill_time_;
  std::optional<Clock::time_point> first_victim_success_;
  std::optional<Clock::time_point> first_victim_failure_;
  std::size_t victim_successes_ = 0;
  std::size_t victim_failures_ = 0;
  std::optional<Clock::time_point> recovered_;
};

// Decompose, then the reference reconstruction: an image is acknowledged once Decompose said OK.
void decompose_one(const Client& client, Ledger& ledger, std::mt19937& rng, const std::string& id) {
  auto started = Clock::now();
  const auto decomposed = client.decompose(random_image(rng, id));
  ledger.record(id, decomposed.status(), started);
  if (!decomposed.ok()) return;
  started = Clock::now();
  const auto reconstructed = client.reconstruct(id, Rank{kRank});
  ledger.record(id, reconstructed.status(), started);
  ledger.acknowledge(id, reconstructed.ok() ? std::optional(reconstructed->pixels()) : std::nullopt);
}

// Decompose new images, reconstruct and look up acknowledged ones, until stopped.
void mixed_workload(const std::stop_token& stop, const Client& client, Ledger& ledger, std::size_t thread) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(thread + 1));
  for (std::size_t n = 0; !stop.stop_requested(); ++n) {
    constexpr std::size_t kOperations = 3;
    if (n % kOperations == 0 && n / kOperations < kNewImagesPerThread) {
      decompose_one(client, ledger, rng, "mixed-" + std::to_string(thread) + "-" + std::to_string(n));
      continue;
    }
    const auto picked = ledger.pick(rng);
    if (!picked) continue;
    const auto& [id, reference] = *picked;
    const auto started = Clock::now();
    if (n % kOperations != 2) {
      const auto reconstructed = client.reconstruct(id, Rank{kRank});
      ledger.record(id, reconstructed.status(), started);
      if (reconstructed.ok() && reference && reconstructed->pixels() != *reference) ledger.note_mismatch();
      if (reconstructed.ok() && !reference) ledger.acknowledge(id, reconstructed->pixels());
    } else {
      ledger.record(id, client.get_image(id).status(), started);
    }
  }
}

// The ids a replica holds in memory now (its cache, not the shared folder).
std::set<std::string> resident_ids(const Client& replica) {
  std::set<std::string> ids;
  std::string page_token;
  do {
    const auto page = replica.list_images(false, 0, page_token);
    if (!page.ok()) return ids;
    for (const auto& image : page->images()) {
      if (image.state() == v1::IMAGE_STATE_RESIDENT) ids.insert(image.id());
    }
    page_token = page->next_page_token();
  } while (!page_token.empty());
  return ids;
}

TEST(LoadBalancerTest, ImagesOfAKilledReplicaReconstructThroughNginxFromTheSharedFolder) {
  if (!nginx_installed()) GTEST_SKIP() << "nginx is not installed (" << kNginxBinary << ")";

  TempFolder data("svdserve_shared_data");
  v1::ServerConfig config = test_config();
  config.set_repository(v1::REPOSITORY_KIND_DIRECTORY);
  config.set_durability(v1::DURABILITY_SYNC);
  config.set_data_dir(data.path().string());
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  std::vector<std::string> addresses;
  for (std::size_t i = 0; i < kReplicas; ++i) {
    replicas.push_back(std::make_unique<ServerProcess>(config));
    ASSERT_TRUE(replicas.back()->serving()) << "replica " << i;
    addresses.push_back(replicas.back()->address());
  }
  const NginxProcess nginx(addresses);
  ASSERT_TRUE(nginx.ready()) << nginx.log();

  ClientOptions options;
  options.timeout = kCallTimeout;
  const Client client(nginx.address(), options);
  Ledger ledger;

  // Seed images from every thread, each acknowledged with its reference pixels.
  {
    std::vector<std::jthread> seeders;
    for (std::size_t t = 0; t < kThreads; ++t) {
      seeders.emplace_back([&, t] {
        std::mt19937 rng(static_cast<std::mt19937::result_type>(100 + t));
        for (std::size_t i = 0; i < kSeedImagesPerThread; ++i) {
          decompose_one(client, ledger, rng, "seed-" + std::to_string(t) + "-" + std::to_string(i));
        }
      });
    }
  }
  const auto seeded = ledger.summary();
  ASSERT_EQ(seeded.failed_calls, 0u) << nginx.log();
  ASSERT_EQ(seeded.acknowledged.size(), kThreads * kSeedImagesPerThread);

  // The id header sent every image to one replica: the one holding most is killed.
  std::vector<std::set<std::string>> held;
  std::size_t held_total = 0;
  for (const auto& replica : replicas) {
    held.push_back(resident_ids(replica->client()));
    held_total += held.back().size();
  }
  EXPECT_EQ(held_total, seeded.acknowledged.size()) << "an image went to more than one replica";
  const auto victim = static_cast<std::size_t>(
      std::ranges::max_element(held, {}, &std::set<std::string>::size) - held.begin());
  ASSERT_FALSE(held[victim].empty());

  {
    std::vector<std::jthread> workers;
    for (std::size_t t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t](const std::stop_token& stop) { mixed_workload(stop, client, ledger, t); });
    }
    ASSERT_TRUE(ledger.wait_for_calls(seeded.calls + kCallsBeforeKill, kPhaseTimeout));
    replicas[victim]->process().signal(SIGKILL);
    ledger.mark_kill(held[victim]);
    EXPECT_TRUE(ledger.wait_for_recovery(kCallsAfterRecovery, kPhaseTimeout))
        << "no call about the killed replica's images succeeded after it died\n" << nginx.log();
  }  // The workers stop and join.

  const auto summary = ledger.summary();
  std::printf("load balancer: %zu calls, %zu failed; %zu images acknowledged, %zu of them on the killed "
              "replica; after the kill, calls about those: %zu failed, %zu answered, the first %.1f ms "
              "after the kill; recovery (first failure to first success) %.1f ms\n",
              summary.calls, summary.failed_calls, summary.acknowledged.size(), held[victim].size(),
              summary.victim_failures_after_kill, summary.victim_successes_after_kill,
              summary.served_again_ms, summary.recovery_ms);
  for (const auto& [code, count] : summary.failed_by_code) {
    std::printf("  failed with %s: %zu\n", std::string(status_code_name(code)).c_str(), count);
  }
  ::testing::Test::RecordProperty("calls", static_cast<int>(summary.calls));
  ::testing::Test::RecordProperty("failed_calls", static_cast<int>(summary.failed_calls));
  ::testing::Test::RecordProperty("recovery_ms", std::to_string(summary.recovery_ms));
  ::testing::Test::RecordProperty("served_again_after_kill_ms", std::to_string(summary.served_again_ms));
  EXPECT_EQ(summary.mismatches, 0u) << "a reconstruction changed its pixels";
  ASSERT_TRUE(summary.victim_served_after_kill);

  // Every acknowledged image, through nginx, from the two survivors.
  std::size_t unrecoverable = 0;
  for (const auto& [id, reference] : summary.acknowledged) {
    const auto reconstructed = client.reconstruct(id, Rank{kRank});
    if (!reconstructed.ok()) {
      ++unrecoverable;
      ADD_FAILURE() << id << ": " << reconstructed.status().error_message();
    } else if (reference) {
      EXPECT_EQ(reconstructed->pixels(), *reference) << id;
    }
  }
  EXPECT_EQ(unrecoverable, 0u);

}

}  // namespace
}  // namespace svdserve::testing
