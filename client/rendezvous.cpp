#include "client/rendezvous.hpp"

#include <algorithm>
#include <numeric>

namespace svdserve {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

[[nodiscard]] std::uint64_t fnv1a(std::uint64_t hash, std::string_view bytes) noexcept {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

// SplitMix64's finaliser: FNV alone leaves similar inputs ("img-1", "img-2") with similar high
// bits, which would send runs of ids to one server.
[[nodiscard]] std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 30U;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27U;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31U;
  return x;
}

}  // namespace

std::uint64_t rendezvous_weight(std::string_view server, std::string_view id) noexcept {
  // The separator keeps ("ab", "c") and ("a", "bc") apart.
  constexpr std::string_view kSeparator{"\0", 1};
  return mix(fnv1a(fnv1a(fnv1a(kFnvOffset, server), kSeparator), id));
}

std::vector<std::size_t> rendezvous_order(std::span<const std::string> servers, std::string_view id) {
  std::vector<std::uint64_t> weights;
  weights.reserve(servers.size());
  for (const auto& server : servers) weights.push_back(rendezvous_weight(server, id));
  std::vector<std::size_t> order(servers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::ranges::stable_sort(order, [&](std::size_t a, std::size_t b) { return weights[a] > weights[b]; });
  return order;
}

}  // namespace svdserve
