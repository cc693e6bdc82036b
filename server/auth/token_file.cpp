#include "server/auth/token_file.hpp"

#include <filesystem>
#include <fstream>
#include <map>

#include "kernels/errors.hpp"

namespace svdserve {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";
constexpr std::string_view kLineFormat = "sha256:<64 hex digits> ROLE NAME [NAMESPACE]";

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r'; }

bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-';
}

bool is_namespace_char(char c) noexcept { return is_name_char(c) || c == '/' || c == ':'; }

template <typename IsAllowed>
bool all_of(std::string_view text, IsAllowed allowed) {
  for (const char c : text) {
    if (!allowed(c)) return false;
  }
  return true;
}

// The fields of a line up to a comment.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t at = 0;
  while (at < line.size()) {
    while (at < line.size() && is_space(line[at])) ++at;
    if (at == line.size() || line[at] == '#') break;
    const std::size_t start = at;
    while (at < line.size() && !is_space(line[at])) ++at;
    fields.push_back(line.substr(start, at - start));
  }
  return fields;
}

[[noreturn]] void refuse(std::size_t line, const std::string& what) {
  throw InvalidArgument("line " + std::to_string(line) + ": " + what);
}

TokenEntry parse_line(const std::vector<std::string_view>& fields, std::size_t line) {
  if (fields.size() < 3 || fields.size() > 4) {
    refuse(line, "expected '" + std::string(kLineFormat) + "', found " +
                     std::to_string(fields.size()) + " fields");
  }
  TokenEntry entry;
  entry.line = line;
  const std::string_view hash = fields[0];
  const auto digest = hash.starts_with(kDigestPrefix)
                          ? parse_digest_hex(hash.substr(kDigestPrefix.size()))
                          : std::nullopt;
  if (!digest) {
    refuse(line, "the first field must be 'sha256:' and the token's 64 hex digits (printf %s "
                 "\"$TOKEN\" | sha256sum, or svdserve-cli token hash); the file holds hashes, "
                 "never tokens");
  }
  entry.digest = *digest;
  const auto role = parse_role(fields[1]);
  if (!role) refuse(line, "the role (second field) must be read, write or admin");
  entry.role = *role;
  const std::string_view name = fields[2];
  if (name.size() > kMaxTokenNameBytes || !all_of(name, is_name_char)) {
    refuse(line, "the name (third field) must be up to " + std::to_string(kMaxTokenNameBytes) +
                     " letters, digits, '_', '.' or '-'");
  }
  entry.name = name;
  if (fields.size() == 4) {
    const std::string_view id_prefix = fields[3];
    if (id_prefix.size() > kMaxNamespaceBytes || !all_of(id_prefix, is_namespace_char)) {
      refuse(line, "the namespace (fourth field) must be up to " +
                       std::to_string(kMaxNamespaceBytes) +
                       " letters, digits, '_', '.', '-', ':' or '/'");
    }
    entry.id_prefix = id_prefix;
  }
  return entry;
}

}  // namespace

std::vector<TokenEntry> parse_token_file(std::string_view text) {
  std::vector<TokenEntry> entries;
  std::map<TokenDigest, std::size_t> line_of;  // no secret here: the hashes are in the file
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    const std::vector<std::string_view> fields = fields_of(line);
    if (fields.empty()) continue;
    TokenEntry entry = parse_line(fields, line_number);
    const auto [earlier, added] = line_of.emplace(entry.digest, line_number);
    if (!added) refuse(line_number, "the same token as line " + std::to_string(earlier->second));
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::vector<TokenEntry> read_token_file(const std::string& path) {
  // Links are followed (Kubernetes mounts secrets as links); a FIFO or a device would block
  // the read or never end.
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error)) {
    throw InvalidArgument("token file '" + path + "' is not a regular file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument("cannot read token file '" + path + "'");
  std::string text;
  text.resize(kMaxTokenFileBytes + 1);
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (file.bad()) throw InvalidArgument("cannot read token file '" + path + "'");
  text.resize(static_cast<std::size_t>(file.gcount()));
  if (text.size() > kMaxTokenFileBytes) {
    throw InvalidArgument("token file '" + path + "' is over " +
                          std::to_string(kMaxTokenFileBytes) + " bytes");
  }
  try {
    return parse_token_file(text);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("token file '" + path + "', " + e.what());
  }
}

}  // namespace svdserve
