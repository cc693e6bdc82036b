#pragma once
// Chooses the factor repository from the config: none (durability none), the folder data_dir,
// or Redis.

#include <memory>

#include "server/repository/factor_cache.hpp"
#include "server/repository/factor_repository.hpp"
#include "svdserve/v1/config.pb.h"

namespace svdserve {

// Null when durability is none. Throws InvalidArgument when the folder cannot be used.
[[nodiscard]] std::unique_ptr<FactorRepository> make_repository(const v1::ServerConfig& config);

[[nodiscard]] FactorCacheOptions factor_cache_options(const v1::ServerConfig& config);

}  // namespace svdserve
