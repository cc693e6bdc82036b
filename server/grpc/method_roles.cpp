#include "server/grpc/method_roles.hpp"

#include <array>
#include <utility>

namespace svdserve {
namespace {

// read: what looks at stored images and the server; write: what stores, deletes or computes from
// a client's image; admin: what reads the server's files, its profiler, or loads its transport.
constexpr std::array<std::pair<std::string_view, Role>, 15> kRoles{{
    {"Decompose", Role::write},
    {"Reconstruct", Role::read},
    {"ReconstructBatch", Role::read},
    {"ReconstructStream", Role::read},
    {"ReconstructProgressive", Role::read},
    {"Compress", Role::write},
    {"GetImage", Role::read},
    {"ListImages", Role::read},
    {"DeleteImage", Role::write},
    {"LoadDirectory", Role::admin},
    {"GetServerInfo", Role::read},
    {"GetStats", Role::read},
    {"Echo", Role::admin},
    {"StartProfiling", Role::admin},
    {"StopProfiling", Role::admin},
}};

}  // namespace

std::optional<Role> required_role(std::string_view method) noexcept {
  for (const auto& [name, role] : kRoles) {
    if (name == method) return role;
  }
  return std::nullopt;
}

}  // namespace svdserve
