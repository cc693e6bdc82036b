#include "server/repository/redis_repository.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/errors.hpp"
#include "tests/client/temp_folder.hpp"
#include "tests/server/repository/redis_server.hpp"
#include "tests/support/thrown_error.hpp"

namespace svdserve {
namespace {

using std::chrono::milliseconds;
using svdserve::test::error_of;
using svdserve::testing::RedisServer;

constexpr std::size_t kMiB = 1024 * 1024;
const std::string kPassword = "correct-horse-battery-staple";

// Every byte value, zeros included, in a random order.
std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(byte(generator));
  return bytes;
}

class RedisRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::binary()) {
      GTEST_SKIP() << "redis-server is not installed (.ci/install-deps.sh installs it)";
    }
    redis_.emplace(kPassword);
  }

  [[nodiscard]] RedisOptions options() const {
    RedisOptions options;
    options.address = redis_->address();
    options.password = kPassword;
    options.timeout = milliseconds(1000);
    options.key_prefix = "test:factors:";
    return options;
  }

  std::optional<RedisServer> redis_;
};

TEST_F(RedisRepositoryTest, PutAndGetRoundTripBinaryData) {
  RedisRepository repository(options());
  const std::string small("\0a\0b\0", 5);
  const std::string large = random_bytes(kMiB, 1);
  repository.put("small", small);
  repository.put("large", large);
  EXPECT_EQ(repository.get("small"), small);
  EXPECT_EQ(repository.get("large"), large);
}

TEST_F(RedisRepositoryTest, PutReplaces) {
  RedisRepository repository(options());
  repository.put("image", "first");
  repository.put("image", "second, longer");
  EXPECT_EQ(repository.get("image"), "second, longer");
}

TEST_F(RedisRepositoryTest, EraseSaysWhetherThereWasAnEntry) {
  RedisRepository repository(options());
  repository.put("image", "factors");
  EXPECT_TRUE(repository.erase("image"));
  EXPECT_FALSE(repository.get("image").has_value());
  EXPECT_FALSE(repository.erase("image"));
}

TEST_F(RedisRepositoryTest, GetOfAMissingIdIsNothing) {
  RedisRepository repository(options());
  EXPECT_FALSE(repository.get("never-stored").has_value());
}

TEST_F(RedisRepositoryTest, KeysAreThePrefixAndTheId) {
  RedisRepository repository(options());
  repository.put("a/b.png", "factors");
  EXPECT_EQ(redis_->command({"GET", "test:factors:a/b.png"}), "factors");
}

TEST_F(RedisRepositoryTest, ScanSeesEveryEntryWithItsHeadAndSizeAndNothingElse) {
  RedisOptions settings = options();
  settings.key_prefix = "scan[1]?:";  // glob characters must match only themselves
  RedisRepository repository(settings);
  constexpr std::size_t kHeadBytes = 16;
  constexpr int kEntries = 2500;  // more than one SCAN step
  std::map<std::string, std::string> stored;
  for (int i = 0; i < kEntries; ++i) {
    const std::string id = "image-" + std::to_string(i);
    stored[id] = random_bytes(1 + static_cast<std::size_t>(i % 40), static_cast<unsigned>(i));
    repository.put(id, stored[id]);
  }
  // What an unescaped pattern would match, a prefix that is only similar, and a value that is
  // not a string under the prefix (skipped).
  redis_->command({"SET", "scan1x:foreign", "not ours"});
  redis_->command({"SET", "scan[1]?", "no colon"});
  redis_->command({"HSET", "scan[1]?:a-hash", "field", "value"});

  std::map<std::string, std::pair<std::string, uint64_t>> seen;
  std::size_t visits = 0;
  repository.scan(kHeadBytes, [&](const RepositoryEntryHead& entry) {
    ++visits;
    // The id is not part of the visit: find the entry by its head and size.
    seen[std::string(entry.head) + "|" + std::to_string(entry.total_bytes)] = {
        std::string(entry.head), entry.total_bytes};
    EXPECT_EQ(entry.written_unix_ms, 0);
  });
  EXPECT_EQ(visits, stored.size());
  for (const auto& [id, bytes] : stored) {
    const std::string head = bytes.substr(0, kHeadBytes);
    EXPECT_TRUE(seen.contains(head + "|" + std::to_string(bytes.size()))) << id;
  }

  std::size_t headless = 0;
  repository.scan(0, [&](const RepositoryEntryHead& entry) {
    EXPECT_TRUE(entry.head.empty());
    EXPECT_GT(entry.total_bytes, 0u);
    ++headless;
  });
  EXPECT_EQ(headless, stored.size());
}

TEST_F(RedisRepositoryTest, AWrongPasswordIsUnavailableAndNeverQuoted) {
  for (const std::string username : {"", "default"}) {
    RedisOptions settings = options();
    settings.username = username;
    settings.password = "not-the-password-41";
    RedisRepository repository(settings);
    const auto thrown = error_of([&] { repository.put("image", "factors"); });
    EXPECT_EQ(thrown.kind, ErrorKind::unavailable) << thrown.message;
    EXPECT_NE(thrown.message.find("refused the password"), std::string::npos) << thrown.message;
    EXPECT_EQ(thrown.message.find("not-the-password-41"), std::string::npos) << thrown.message;
    EXPECT_EQ(thrown.message.find(kPassword), std::string::npos) << thrown.message;
  }
}

TEST_F(RedisRepositoryTest, NoPasswordWhereOneIsNeededIsUnavailable) {
  RedisOptions settings = options();
  settings.password.clear();
  RedisRepository repository(settings);
  const auto thrown = error_of([&] { (void)repository.get("image"); });
  EXPECT_EQ(thrown.kind, ErrorKind::unavailable);
  EXPECT_NE(thrown.message.find("needs a password"), std::string::npos) << thrown.message;
}

TEST_F(RedisRepositoryTest, DescribeNamesTheAddressAndNeverThePassword) {
  RedisRepository repository(options());
  EXPECT_EQ(repository.describe(), "redis " + redis_->address());
}

TEST_F(RedisRepositoryTest, OutOfMemoryIsResourceExhausted) {
  RedisRepository repository(options());
  // A little room above what an empty Redis uses; eviction off, as docs/REDIS.md requires.
  redis_->command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  redis_->command({"CONFIG", "SET", "maxmemory", std::to_string(4 * kMiB)});
  const std::string value = random_bytes(kMiB, 2);
  const auto thrown = error_of([&] {
    for (int i = 0; i < 16; ++i) repository.put("image-" + std::to_string(i), value);
  });
  EXPECT_EQ(thrown.kind, ErrorKind::resource_exhausted) << thrown.message;
  EXPECT_NE(thrown.message.find("out of memory"), std::string::npos) << thrown.message;
}

TEST_F(RedisRepositoryTest, StartsWhileRedisIsDownAndWorksOnceItIsUp) {
  redis_->stop();
  RedisRepository repository(options());
  EXPECT_EQ(error_of([&] { (void)repository.get("image"); }).kind, ErrorKind::unavailable);
  redis_->start();
  repository.put("image", "factors");
  EXPECT_EQ(repository.get("image"), "factors");
}

// A stopped Redis refuses connections: the call fails at once, well within the timeout.
TEST_F(RedisRepositoryTest, AStoppedRedisIsUnavailableWithinTwiceTheTimeout) {
  const RedisOptions settings = options();
  RedisRepository repository(settings);
  repository.put("image", "factors");
  redis_->stop();
  const auto start = std::chrono::steady_clock::now();
  const auto thrown = error_of([&] { (void)repository.get("image"); });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(thrown.kind, ErrorKind::unavailable) << thrown.message;
  EXPECT_LT(elapsed, 2 * settings.timeout);
}

// A frozen Redis accepts connections but never answers: the timeout ends the call.
TEST_F(RedisRepositoryTest, AFrozenRedisIsUnavailableWithinTwiceTheTimeout) {
  const RedisOptions settings = options();
  RedisRepository repository(settings);
  repository.put("image", "factors");
  redis_->pause();
  for (int call = 0; call < 2; ++call) {  // on the pooled connection, then on a new one
    const auto start = std::chrono::steady_clock::now();
    const auto thrown = error_of([&] { (void)repository.get("image"); });
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(thrown.kind, ErrorKind::unavailable) << thrown.message;
    EXPECT_NE(thrown.message.find("did not answer within 1000 ms"), std::string::npos)
        << thrown.message;
    EXPECT_LT(elapsed, 2 * settings.timeout);
  }
  redis_->resume();
  EXPECT_EQ(repository.get("image"), "factors");
}

TEST_F(RedisRepositoryTest, ARestartedRedisIsUsedAgainWithoutANewRepository) {
  RedisOptions settings = options();
  settings.pool_size = 4;
  RedisRepository repository(settings);
  // Open every pooled connection, so that all of them are stale after the restart.
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { repository.put("warm-" + std::to_string(i), "x"); });
  }
  for (std::thread& thread : threads) thread.join();
  redis_->stop();
  EXPECT_EQ(error_of([&] { (void)repository.get("warm-0"); }).kind, ErrorKind::unavailable);
  redis_->start();
  // Nothing persisted (the test's Redis has no AOF): what counts is that every call works.
  for (int i = 0; i < 8; ++i) {
    const std::string id = "after-" + std::to_string(i);
    EXPECT_NO_THROW(repository.put(id, "factors")) << i;
    EXPECT_EQ(repository.get(id), "factors") << i;
  }
}

TEST_F(RedisRepositoryTest, EightThreadsShareTwoConnections) {
  RedisOptions settings = options();
  settings.pool_size = 2;
  RedisRepository repository(settings);
  constexpr int kThreads = 8;
  constexpr int kCallsPerThread = 50;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        const std::string id = std::to_string(t) + "/" + std::to_string(i);
        const std::string value = random_bytes(1000 + static_cast<std::size_t>(i),
                                               static_cast<unsigned>(t * 1000 + i));
        repository.put(id, value);
        if (repository.get(id) != value) ++mismatches;
        if (i % 2 == 0 && !repository.erase(id)) ++mismatches;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  std::size_t entries = 0;
  repository.scan(0, [&](const RepositoryEntryHead&) { ++entries; });
  EXPECT_EQ(entries, static_cast<std::size_t>(kThreads * kCallsPerThread / 2));
}

TEST(RedisRepositoryOptions, AnAddressThatIsNotOneIsRefusedAtConstruction) {
  for (const char* address : {"", "localhost", "host:0", "host:65536", "::1:6379", "unix:rel"}) {
    RedisOptions options;
    options.address = address;
    EXPECT_EQ(error_of([&] { RedisRepository repository(options); }).kind,
              ErrorKind::invalid_argument)
        << address;
  }
}

class RedisPasswordFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    const std::string path = (folder_.path() / "password").string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  svdserve::testing::TempFolder folder_{"svdserve_redis_password"};
};

TEST_F(RedisPasswordFile, TheFirstLineWithoutItsEndingIsThePassword) {
  EXPECT_EQ(read_redis_password(write("secret\n")), "secret");
  EXPECT_EQ(read_redis_password(write("secret\r\nsecond line\n")), "secret");
  EXPECT_EQ(read_redis_password(write("no newline")), "no newline");
}

TEST_F(RedisPasswordFile, AnEmptyOrMissingFileIsRefusedWithoutQuotingIt) {
  for (const std::string& text : {std::string(""), std::string("\nsecret-on-line-two\n")}) {
    const auto thrown = error_of([&] { (void)read_redis_password(write(text)); });
    EXPECT_EQ(thrown.kind, ErrorKind::invalid_argument);
    EXPECT_NE(thrown.message.find("redis_password_file"), std::string::npos) << thrown.message;
    EXPECT_EQ(thrown.message.find("secret-on-line-two"), std::string::npos) << thrown.message;
  }
  const auto missing = error_of([&] {
    (void)read_redis_password((folder_.path() / "absent").string());
  });
  EXPECT_EQ(missing.kind, ErrorKind::invalid_argument);
  const auto folder = error_of([&] { (void)read_redis_password(folder_.path().string()); });
  EXPECT_EQ(folder.kind, ErrorKind::invalid_argument);
}

}  // namespace
}  // namespace svdserve
