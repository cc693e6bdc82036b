// Bearer tokens for a server with a token file: token hash, token new. Neither talks to a
// server; the token file holds only what they print after the token itself.

#include <algorithm>
#include <istream>
#include <string>

#include "client/bearer_token.hpp"
#include "client/cli/commands/common.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

// The characters the server's token file takes in a name, and in a namespace.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}
bool is_namespace_char(char c) { return is_name_char(c) || c == '/' || c == ':'; }

// The token: the first line of standard input, without surrounding whitespace.
std::string token_from_input(const CommandContext& context) {
  std::string line;
  if (context.in() == nullptr || !std::getline(*context.in(), line)) line.clear();
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = line.find_first_not_of(kSpace);
  if (first == std::string::npos) {
    throw UsageError("token hash reads the token from standard input; it was empty");
  }
  return line.substr(first, line.find_last_not_of(kSpace) - first + 1);
}

// token new ROLE NAME [NAMESPACE]: the file line for a new token.
std::string file_line(const ParsedArgs& args) {
  const auto& words = args.positionals();
  if (words.size() < 3) throw UsageError("token new needs a ROLE and a NAME");
  const std::string& role = words[1];
  if (role != "read" && role != "write" && role != "admin") {
    throw UsageError("ROLE must be read, write or admin");
  }
  const std::string& name = words[2];
  if (name.empty() || !std::ranges::all_of(name, is_name_char)) {
    throw UsageError("NAME must be letters, digits, '_', '.' or '-'");
  }
  std::string line = role + " " + name;
  if (words.size() == 4) {
    const std::string& id_prefix = words[3];
    if (id_prefix.empty() || !std::ranges::all_of(id_prefix, is_namespace_char)) {
      throw UsageError("NAMESPACE must be letters, digits, '_', '.', '-', ':' or '/'");
    }
    line += " " + id_prefix;
  }
  return line;
}

int run_token(CommandContext& context, const ParsedArgs& args) {
  const std::string& action = args.positionals().front();
  std::string token;
  std::string line;
  if (action == "hash") {
    if (args.positionals().size() > 1) throw UsageError("token hash takes no arguments");
    token = token_from_input(context);
    line = token_hash_field(token);
  } else if (action == "new") {
    const std::string rest = file_line(args);
    token = new_bearer_token();
    line = token_hash_field(token) + " " + rest;
  } else {
    throw UsageError("unknown token action '" + action + "'; use hash or new");
  }
  if (context.json()) {
    JsonWriter json;
    json.begin_object();
    if (action == "new") json.field("token", token);
    json.field("line", line).end_object();
    context.out() << json.str() << '\n';
  } else {
    if (action == "new") context.out() << token << '\n';
    context.out() << line << '\n';
  }
  return to_int(ExitCode::ok);
}

}  // namespace

std::vector<Command> token_commands() {
  return {
      {.name = "token",
       .synopsis = "hash | new ROLE NAME [NAMESPACE]",
       .summary = "bearer tokens: the hash of one (read from standard input), or a new one "
                  "and its token file line",
       .min_positionals = 1,
       .max_positionals = 4,
       .run = run_token},
  };
}

}  // namespace svdserve::cli
