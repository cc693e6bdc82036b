// Two real server processes on one real Redis: an image decomposed through one reconstructs
// through the other, with the same pixels; Redis stopped is a clear UNAVAILABLE (for writes and
// for loads) and the servers keep serving what they hold; Redis back, they use it again without
// a restart.
#include <gtest/gtest.h>

#include <fstream>

#include "../client/temp_folder.hpp"
#include "../server/repository/redis_server.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace svdserve::testing {
namespace {

constexpr char kPassword[] = "replicas-share-this-secret";

TEST(RedisReplicasTest, ReplicasShareOneRedisAndRecoverWhenItReturns) {
  if (!RedisServer::binary()) GTEST_SKIP() << "redis-server is not installed";
  RedisServer redis(kPassword);
  TempFolder secrets("redis_secret");
  const auto password_file = secrets.path() / "redis-password";
  std::ofstream(password_file) << kPassword << "\n";

  v1::ServerConfig config = test_config();
  config.set_durability(v1::DURABILITY_SYNC);
  config.set_repository(v1::REPOSITORY_KIND_REDIS);
  config.set_redis_address(redis.address());
  config.set_redis_password_file(password_file.string());
  config.set_redis_timeout_ms(1000);
  ServerProcess a(config);
  ServerProcess b(config);
  ASSERT_TRUE(a.serving());
  ASSERT_TRUE(b.serving());

  const std::string image = read_test_image("butterfly.jpg");
  ASSERT_TRUE(a.client().decompose(image, 32, "shared").ok());
  const auto through_a = a.client().reconstruct("shared", Rank{16});
  const auto through_b = b.client().reconstruct("shared", Rank{16});
  ASSERT_TRUE(through_a.ok());
  ASSERT_TRUE(through_b.ok()) << through_b.status().error_message();
  EXPECT_EQ(through_b->pixels(), through_a->pixels());

  // An id B makes up reaches A too.
  const auto made_by_b = b.client().decompose(image, 32);
  ASSERT_TRUE(made_by_b.ok());
  const std::string only_b = made_by_b->id();
  const auto info = a.client().get_image(only_b);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->info().stored());
  ASSERT_TRUE(b.client().decompose(image, 32, "untouched-by-a").ok());

  redis.stop();
  const auto start = std::chrono::steady_clock::now();
  const auto refused = a.client().decompose(image, 32, "while-down");
  EXPECT_EQ(refused.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(refused.status().error_message().find(kPassword), std::string::npos);
  EXPECT_EQ(a.client().reconstruct("untouched-by-a", Rank{16}).status().error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(a.client().reconstruct("shared", Rank{16}).ok()) << "memory still serves";

  // This Redis keeps nothing across a restart (no AOF): what comes back is an empty Redis, which
  // the servers use again without a restart of their own.
  redis.start();
  EXPECT_TRUE(eventually([&] { return a.client().decompose(image, 32, "after").ok(); },
                         std::chrono::seconds(10)));
  const auto after = b.client().reconstruct("after", Rank{16});
  EXPECT_TRUE(after.ok()) << after.status().error_message();
  EXPECT_EQ(b.client().get_image("while-down").status().error_code(),
            grpc::StatusCode::NOT_FOUND) << "refused, yet kept";
}

}  // namespace
}  // namespace svdserve::testing
