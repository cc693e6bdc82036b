#pragma once
// The TLS files named in the config, checked at start so that a typo or swapped files stop the
// server with the field's name rather than fail every handshake later. Nothing of a file's text
// is ever quoted: a key file holds a secret.

#include <optional>
#include <string>

namespace svdserve {

enum class PemContent { certificate, private_key };

// Why `path` cannot serve as a PEM file of `content` ("cannot be read (Permission denied)",
// "holds no PEM private key"), or nullopt when it can. Follows symbolic links (mounted secrets
// are links), refuses what is not a regular file without blocking on it, reads at most 1 MiB.
[[nodiscard]] std::optional<std::string> pem_file_problem(const std::string& path,
                                                          PemContent content);

}  // namespace svdserve
