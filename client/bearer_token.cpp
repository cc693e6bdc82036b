#include "client/bearer_token.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <fstream>
#include <stdexcept>

namespace svdserve {
namespace {

constexpr std::size_t kNewTokenBytes = 32;
constexpr std::string_view kHexDigits = "0123456789abcdef";
constexpr std::string_view kBase64Url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string_view trimmed(std::string_view text) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = text.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kSpace) - first + 1);
}

std::string base64url(const unsigned char* bytes, std::size_t size) {
  std::string text;
  for (std::size_t i = 0; i < size; i += 3) {
    const std::size_t left = size - i;
    const unsigned int group = static_cast<unsigned int>(bytes[i]) << 16 |
                               (left > 1 ? static_cast<unsigned int>(bytes[i + 1]) << 8 : 0) |
                               (left > 2 ? bytes[i + 2] : 0);
    const std::size_t characters = left >= 3 ? 4 : left + 1;  // no padding
    for (std::size_t c = 0; c < characters; ++c) text += kBase64Url[(group >> (18 - 6 * c)) & 0x3f];
  }
  return text;
}

}  // namespace

std::string read_bearer_token_file(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) {
    throw std::runtime_error("cannot read a token from '" + path + "'");
  }
  const std::string_view token = trimmed(line);
  if (token.empty()) throw std::runtime_error("the first line of '" + path + "' holds no token");
  return std::string(token);
}

std::string token_hash_field(std::string_view token) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(token.data(), token.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed in libcrypto");
  }
  std::string field = "sha256:";
  for (unsigned int i = 0; i < length; ++i) {
    field += kHexDigits[digest[i] >> 4];
    field += kHexDigits[digest[i] & 0xf];
  }
  return field;
}

std::string new_bearer_token() {
  std::array<unsigned char, kNewTokenBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("no random bytes from libcrypto");
  }
  return base64url(bytes.data(), bytes.size());
}

}  // namespace svdserve
