#pragma once
// Rendezvous (highest random weight) hashing: which of several servers an image id goes to
// first, and which next when that one is down. Each server's weight for an id is a hash of the
// pair; the id tries servers by falling weight. The same id always picks the same server while
// the set is unchanged, ids spread evenly, and removing a server moves only its own ids (each
// to its next server), so the replicas' caches stay warm.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace svdserve {

// The weight of `server` for `id`: a 64-bit hash, stable across processes and platforms (every
// client must route alike).
[[nodiscard]] std::uint64_t rendezvous_weight(std::string_view server, std::string_view id) noexcept;

// Indices into `servers`, in the order `id` tries them (heaviest first; ties by index).
[[nodiscard]] std::vector<std::size_t> rendezvous_order(std::span<const std::string> servers,
                                                        std::string_view id);

}  // namespace svdserve
