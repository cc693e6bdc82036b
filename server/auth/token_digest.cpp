#include "server/auth/token_digest.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kHexDigits = "0123456789abcdef";

std::optional<unsigned char> hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return static_cast<unsigned char>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<unsigned char>(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return static_cast<unsigned char>(c - 'A' + 10);
  return std::nullopt;
}

}  // namespace

TokenDigest digest_of(std::string_view token) {
  TokenDigest digest{};
  unsigned int length = 0;
  if (EVP_Digest(token.data(), token.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != digest.size()) {
    throw InternalError("SHA-256 failed in libcrypto");
  }
  return digest;
}

std::optional<TokenDigest> parse_digest_hex(std::string_view hex) noexcept {
  if (hex.size() != 2 * kTokenDigestBytes) return std::nullopt;
  TokenDigest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) {
    const auto high = hex_value(hex[2 * i]);
    const auto low = hex_value(hex[2 * i + 1]);
    if (!high || !low) return std::nullopt;
    digest[i] = static_cast<unsigned char>(*high << 4 | *low);
  }
  return digest;
}

std::string hex_of(const TokenDigest& digest) {
  std::string hex;
  hex.reserve(2 * digest.size());
  for (const unsigned char byte : digest) {
    hex += kHexDigits[byte >> 4];
    hex += kHexDigits[byte & 0xf];
  }
  return hex;
}

std::string random_token() {
  TokenDigest bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw InternalError("no random bytes from libcrypto");
  }
  return hex_of(bytes);
}

bool same_digest(const TokenDigest& a, const TokenDigest& b) noexcept {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace svdserve
