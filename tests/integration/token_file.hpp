#pragma once
// A token file for a test server, in a folder of its own, replaced whole (written beside it and
// renamed over it, as the README says to), and clients that present a token.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "client/bearer_token.hpp"
#include "client/client.hpp"
#include "server_process.hpp"
#include "tests/client/temp_folder.hpp"

namespace svdserve::testing {

// A token's line: its hash, role, name and namespace (none when empty).
[[nodiscard]] inline std::string token_line(std::string_view token, std::string_view role,
                                            std::string_view name,
                                            std::string_view id_prefix = {}) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) about `" " + std::string(...)`.
  std::string line = token_hash_field(token);
  for (std::string_view field : {role, name, id_prefix}) {
    if (field.empty()) continue;
    line += ' ';
    line += field;
  }
  return line;
}

class TestTokenFile {
 public:

  void write(const std::vector<std::string>& lines) {
    const std::filesystem::path next = folder_.path() / "tokens.new";
    {
      std::ofstream file(next);
      file << "# svdserve test tokens\n";
      for (const std::string& line : lines) file << line << '\n';
    }
    std::filesystem::rename(next, path());
  }
  [[nodiscard]] std::string path() const { return (folder_.path() / "tokens").string(); }

 private:
  TempFolder folder_{"svdserve_tokens"};
};

// A client of `server` on a connection of its own that presents `token` (none when empty).
[[nodiscard]] inline std::unique_ptr<Client> client_with_token(const ServerProcess& server,
                                                              std::string token) {
  ClientOptions options;
  options.wait_for_ready = true;
  options.timeout = std::chrono::seconds(60);
  options.dedicated_connection = true;
  options.bearer_token = std::move(token);
  return std::make_unique<Client>(server.address(), options);
}

}  // namespace svdserve::testing
