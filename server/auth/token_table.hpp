#pragma once
// The tokens of one version of the token file, looked up by the token a call presents.

#include <cstddef>
#include <vector>

#include "server/auth/token_file.hpp"

namespace svdserve {

class TokenTable {
 public:
  explicit TokenTable(std::vector<TokenEntry> entries) : entries_(std::move(entries)) {}

  // The entry of the token whose SHA-256 is `digest` (digest_of(token)), or nullptr. Compared
  // with every entry's, each in constant time and without stopping at a match, so the time
  // taken says nothing about which entry (if any) matched.
  [[nodiscard]] const TokenEntry* find(const TokenDigest& digest) const;

  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::vector<TokenEntry> entries_;
};

}  // namespace svdserve
