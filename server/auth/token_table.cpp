#include "server/auth/token_table.hpp"

namespace svdserve {

const TokenEntry* TokenTable::find(const TokenDigest& digest) const {
  const TokenEntry* found = nullptr;
  for (const TokenEntry& entry : entries_) {
    if (same_digest(entry.digest, digest)) found = &entry;
  }
  return found;
}

}  // namespace svdserve
