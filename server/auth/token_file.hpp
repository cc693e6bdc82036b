#pragma once
// The token file: one token per line,
//   sha256:<64 hex digits> ROLE NAME [NAMESPACE]
// the SHA-256 of the token (never the token), its role (read, write, admin), a name for the logs
// and optionally a namespace: an id prefix such as "tenant-a/" under which the token's images
// live. Blank lines and everything from a '#' that starts a field are ignored.
// Errors name the line and what is wrong with it, never its text: a token pasted by mistake must
// not reach a log.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/auth/role.hpp"
#include "server/auth/token_digest.hpp"

namespace svdserve {

// A file this large is not a token file; reading it on a call's thread would stall the call.
inline constexpr std::size_t kMaxTokenFileBytes = 1 << 20;
inline constexpr std::size_t kMaxTokenNameBytes = 64;
inline constexpr std::size_t kMaxNamespaceBytes = 128;

struct TokenEntry {
  TokenDigest digest{};
  Role role = Role::read;
  std::string name;       // [A-Za-z0-9_.-]+, for logs
  std::string id_prefix;  // [A-Za-z0-9_.:/-]*; empty: every id, as stored
  std::size_t line = 0;   // 1-based, for messages
};

// Throws InvalidArgument "line N: ..." at the first bad line; two lines with the same hash are
// an error too (which role would it have?).
[[nodiscard]] std::vector<TokenEntry> parse_token_file(std::string_view text);

// Reads and parses `path` (links followed); InvalidArgument naming the path when it cannot be
// read, is not a regular file, is over kMaxTokenFileBytes, or does not parse.
[[nodiscard]] std::vector<TokenEntry> read_token_file(const std::string& path);

}  // namespace svdserve
