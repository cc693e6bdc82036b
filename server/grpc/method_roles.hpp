#pragma once
// The least role that may call each method of svdserve.v1.SvdServe: one table, so that a new RPC
// without a role is refused to everyone (and its test fails) rather than open to all.

#include <optional>
#include <string_view>

#include "server/auth/role.hpp"

namespace svdserve {

// By the method's name in the proto ("Decompose"); nullopt for a name not in the table.
[[nodiscard]] std::optional<Role> required_role(std::string_view method) noexcept;

}  // namespace svdserve
