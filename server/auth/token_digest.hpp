#pragma once
// A token as the server keeps it: its SHA-256, never the token itself. The token file holds the
// hex of this digest (`printf %s "$TOKEN" | sha256sum`).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace svdserve {

inline constexpr std::size_t kTokenDigestBytes = 32;
using TokenDigest = std::array<unsigned char, kTokenDigestBytes>;

// SHA-256 of the token's bytes (OpenSSL's libcrypto).
[[nodiscard]] TokenDigest digest_of(std::string_view token);

// 64 hex digits (either case) into a digest; nullopt for anything else.
[[nodiscard]] std::optional<TokenDigest> parse_digest_hex(std::string_view hex) noexcept;

// Lower-case hex, as sha256sum prints it.
[[nodiscard]] std::string hex_of(const TokenDigest& digest);

// A fresh token: 32 random bytes (RAND_bytes), as hex.
[[nodiscard]] std::string random_token();

// Equality in time that does not depend on where the digests differ (CRYPTO_memcmp).
[[nodiscard]] bool same_digest(const TokenDigest& a, const TokenDigest& b) noexcept;

}  // namespace svdserve
