#include "server/process/repository_selection.hpp"

#include <chrono>

#include "server/repository/directory_repository.hpp"
#include "server/repository/redis_repository.hpp"

namespace svdserve {

std::unique_ptr<FactorRepository> make_repository(const v1::ServerConfig& config) {
  if (config.durability() == v1::DURABILITY_NONE) return nullptr;
  switch (config.repository()) {
    case v1::REPOSITORY_KIND_REDIS:
      return std::make_unique<RedisRepository>(RedisOptions{
          .address = config.redis_address(),
          .username = config.redis_username(),
          .password = config.redis_password_file().empty()
                          ? std::string()
                          : read_redis_password(config.redis_password_file()),
          .timeout = std::chrono::milliseconds(config.redis_timeout_ms()),
          .pool_size = config.redis_pool_size(),
          .key_prefix = config.redis_key_prefix()});
    default:
      return std::make_unique<DirectoryRepository>(config.data_dir());
  }
}

FactorCacheOptions factor_cache_options(const v1::ServerConfig& config) {
  return FactorCacheOptions{
      .durability = config.durability() == v1::DURABILITY_ASYNC  ? Durability::async
                    : config.durability() == v1::DURABILITY_NONE ? Durability::none
                                                                 : Durability::sync,
      .writer_threads = config.persist_threads(),
      .write_queue_capacity = config.persist_queue_capacity()};
}

}  // namespace svdserve
