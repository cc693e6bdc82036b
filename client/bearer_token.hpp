#pragma once
// The client's side of svdserve's bearer tokens: reading one from a file, the hash the server's
// token file holds for it, and fresh ones. The server keeps only the hash
// (`sha256:<hex>`, as `printf %s "$TOKEN" | sha256sum` prints it).

#include <string>
#include <string_view>

namespace svdserve {

// The token of a token file: its first line, without surrounding whitespace. Throws
// std::runtime_error (naming the path, never the text) when it cannot be read or is empty.
[[nodiscard]] std::string read_bearer_token_file(const std::string& path);

// The first field of the token's line in the server's token file: "sha256:" and 64 hex digits.
[[nodiscard]] std::string token_hash_field(std::string_view token);

// A new token: 32 random bytes (OpenSSL's RAND_bytes), base64url without padding (43 characters,
// safe in metadata, shells and files).
[[nodiscard]] std::string new_bearer_token();

}  // namespace svdserve
