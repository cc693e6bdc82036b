#pragma once
// What a token may do. Each role allows everything the one before it allows:
//   read   Reconstruct*, GetImage, ListImages, GetServerInfo, GetStats
//   write  also Decompose, Compress, DeleteImage
//   admin  also LoadDirectory, StartProfiling, StopProfiling, Echo
// (server/grpc/method_roles.cpp has the table by method).

#include <optional>
#include <string_view>

namespace svdserve {

enum class Role { read, write, admin };

[[nodiscard]] constexpr bool allows(Role held, Role needed) noexcept { return held >= needed; }

[[nodiscard]] constexpr std::string_view role_name(Role role) noexcept {
  switch (role) {
    case Role::read: return "read";
    case Role::write: return "write";
    case Role::admin: return "admin";
  }
  return "?";
}

// "read", "write" or "admin"; nullopt for anything else.
[[nodiscard]] constexpr std::optional<Role> parse_role(std::string_view text) noexcept {
  for (Role role : {Role::read, Role::write, Role::admin}) {
    if (text == role_name(role)) return role;
  }
  return std::nullopt;
}

}  // namespace svdserve
