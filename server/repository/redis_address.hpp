#pragma once
// Where redis_address points: "host:port" or "unix:/path/to/socket". Read by the config's
// validation and by each connection, so that both agree on what is valid.

#include <optional>
#include <string>
#include <string_view>

namespace svdserve {

struct RedisEndpoint {
  std::string host;  // without the brackets of an IPv6 literal
  int port = 0;
  std::string unix_path;  // set for "unix:/path"; host and port are then unused
};

// "host:port" (port 1..65535, "[v6]:port" for IPv6) or "unix:/absolute/path"; nullopt otherwise.
[[nodiscard]] std::optional<RedisEndpoint> parse_redis_address(std::string_view address);

}  // namespace svdserve
