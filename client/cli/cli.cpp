#include "client/cli/cli.hpp"

#include <algorithm>
#include <exception>
#include <sstream>

#include "client/bearer_token.hpp"
#include "client/cli/report.hpp"
#include "client/cli/server_address.hpp"
#include "client/status_text.hpp"

namespace svdserve::cli {
namespace {

constexpr std::string_view kProgram = "svdserve-cli";

const std::vector<OptionSpec>& global_options() {
  static const std::vector<OptionSpec> options = {
      {"server", "HOST[:PORT][,...]",
       "server or load balancer address (port 50051 when none is given), or several replicas "
       "(repeat it, or a,b,c); default $SVDSERVE_SERVER, else localhost:50051"},
      {"timeout", "SECONDS", "deadline of each call; 0 for none (default 60)"},
      {"tls", "", "connect with TLS (implied by --ca, --cert and --key)"},
      {"ca", "FILE", "TLS: PEM CAs that may sign the server's certificate (default: the "
                     "system's)"},
      {"cert", "FILE", "mutual TLS: this client's PEM certificate (with --key)"},
      {"key", "FILE", "mutual TLS: its PEM private key"},
      {"token-file", "FILE",
       "bearer token for a server with tokens: FILE's first line (default $SVDSERVE_TOKEN)"},
      {"json", "", "machine-readable output on stdout"},
      {"help", "", "show help", 'h'},
  };
  return options;
}

constexpr std::string_view kSeveralServers =
    "Several servers (replicas sharing one factor repository, no load balancer):\n"
    "  a call about an image goes to the replica its id picks by rendezvous hashing, so the\n"
    "  same id finds the same replica's cache while the list is unchanged; calls without an id\n"
    "  take the replicas in turn; a call answered UNAVAILABLE is made once more on the next\n"
    "  replica in the id's order. list pages come from one replica; bench takes one address.\n";

constexpr std::string_view kExitCodes =
    "Exit codes:\n"
    "  0  ok\n"
    "  1  the server answered an error, some items failed, or a local file could not be\n"
    "     read or written\n"
    "  2  usage error\n"
    "  3  server unreachable: UNAVAILABLE or DEADLINE_EXCEEDED\n";

void append_options(std::ostringstream& text, std::span<const OptionSpec> options) {
  for (const auto& option : options) {
    // Built with append(): GCC 12 warns falsely (-Wrestrict) on chains of operator+.
    std::string left = "  ";
    if (option.short_name != '\0') left.append("-").append(1, option.short_name).append(", ");
    left.append("--").append(option.name);
    if (option.takes_value()) left.append(" ").append(option.value_name);
    constexpr std::size_t kHelpColumn = 26;
    text << left;
    if (left.size() < kHelpColumn) {
      text << std::string(kHelpColumn - left.size(), ' ');
    } else {
      text << "\n" << std::string(kHelpColumn, ' ');
    }
    text << option.help << '\n';
  }
}

const Command* find_command(std::string_view name) {
  const auto& commands = all_commands();
  const auto found = std::ranges::find(commands, name, &Command::name);
  return found == commands.end() ? nullptr : &*found;
}

// The command's options plus the global ones it does not redefine (bench's --json FILE).
std::vector<OptionSpec> merged_options(const Command& command) {
  std::vector<OptionSpec> options = command.options;
  for (const auto& global : global_options()) {
    if (std::ranges::find(options, global.name, &OptionSpec::name) == options.end()) {
      options.push_back(global);
    }
  }
  return options;
}

// "a:1,b:2" -> {"a:1", "b:2"}; duplicates dropped (a server listed twice would take two
// shares of the calls without an id).
void add_servers(std::string_view list, std::vector<std::string>& servers) {
  while (true) {
    const auto comma = list.find(',');
    if (list.substr(0, comma).empty()) throw UsageError("--server expects HOST:PORT[,HOST:PORT...]");
    const std::string server = with_default_port(std::string(list.substr(0, comma)));
    if (std::ranges::find(servers, server) == servers.end()) servers.push_back(server);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

// Later occurrences win: options after the command override those before it. --server
// accumulates within one side of the command.
void apply_globals(const ParsedArgs& args, GlobalOptions& globals, bool json_is_global) {
  if (const auto lists = args.values("server"); !lists.empty()) {
    globals.servers.clear();
    for (const auto& list : lists) add_servers(list, globals.servers);
  }
  if (auto timeout = args.value("timeout")) globals.timeout = parse_seconds(*timeout, "--timeout");
  if (auto token_file = args.value("token-file")) {
    if (token_file->empty()) throw UsageError("--token-file expects a file");
    globals.bearer_token = read_bearer_token_file(*token_file);
  }
  if (json_is_global && args.has("json")) globals.json = true;
  if (args.has("tls") || args.has("ca") || args.has("cert") || args.has("key")) {
    ClientTls& tls = globals.tls ? *globals.tls : globals.tls.emplace();
    const auto set_file = [&](std::string_view name, std::string& file) {
      if (auto value = args.value(name)) {
        if (value->empty()) throw UsageError("--" + std::string(name) + " expects FILE");
        file = std::move(*value);
      }
    };
    set_file("ca", tls.ca_file);
    set_file("cert", tls.cert_file);
    set_file("key", tls.key_file);
  }
}

// Once every option is in: a client certificate is a pair.
void check_globals(const GlobalOptions& globals) {
  if (globals.tls && globals.tls->cert_file.empty() != globals.tls->key_file.empty()) {
    throw UsageError("--cert and --key go together (a client certificate and its key)");
  }
}

int usage_error(std::ostream& err, const UsageError& error, const Command* command) {
  err << "error: " << error.what() << '\n';
  if (command != nullptr) {
    err << "usage: " << kProgram << " " << command->name << " " << command->synopsis << '\n'
        << "Run '" << kProgram << " " << command->name << " --help' for its options.\n";
  } else {
    err << "Run '" << kProgram << " --help' for the commands.\n";
  }
  return to_int(ExitCode::usage);
}

}  // namespace

const std::vector<Command>& all_commands() {
  static const std::vector<Command> commands = [] {
    std::vector<Command> all;
    for (auto group : {decompose_commands(), reconstruct_commands(), run_commands(), spectrum_commands(),
                       store_commands(),
                       server_commands(), bench_commands(), token_commands()}) {
      all.insert(all.end(), group.begin(), group.end());
    }
    return all;
  }();
  return commands;
}

std::string usage_text() {
  std::ostringstream text;
  text << "usage: " << kProgram
       << " [--server HOST:PORT[,...]] [--tls [--ca FILE] [--cert FILE --key FILE]]\n"
          "                    [--timeout SECONDS] [--token-file FILE] [--json] COMMAND [ARGS]\n\n"
       << "Client of svdserve, the SVD image reconstruction service.\n\nCommands:\n";
  for (const auto& command : all_commands()) {
    std::string left = "  " + std::string(command.name);
    constexpr std::size_t kSummaryColumn = 16;
    left.resize(std::max(left.size() + 1, kSummaryColumn), ' ');
    text << left << command.summary << '\n';
  }
  text << "\nGlobal options (also accepted after the command):\n";
  append_options(text, global_options());
  text << '\n' << kSeveralServers;
  text << "\nRun '" << kProgram << " COMMAND --help' for a command's options.\n\n" << kExitCodes;
  return text.str();
}

std::string command_help(const Command& command) {
  std::ostringstream text;
  text << "usage: " << kProgram << " " << command.name << " " << command.synopsis << "\n\n"
       << command.summary << "\n";
  if (!command.options.empty()) {
    text << "\nOptions:\n";
    append_options(text, command.options);
  }
  text << "\nGlobal options:\n";
  append_options(text, global_options());
  text << '\n' << kExitCodes;
  return text.str();
}

const ServerSet& CommandContext::servers() {
  if (!servers_) {
    ClientOptions options;
    options.timeout = globals_.timeout;
    options.tls = globals_.tls;
    options.bearer_token = globals_.bearer_token;
    servers_.emplace(globals_.servers, options);
  }
  return *servers_;
}

int run_cli(std::span<const std::string> args, const CliEnvironment& environment) {
  std::ostream& err = environment.err;
  const Command* command = nullptr;
  try {
    GlobalOptions globals;
    if (environment.server_from_env && !environment.server_from_env->empty()) {
      globals.servers.clear();
      add_servers(*environment.server_from_env, globals.servers);
    }
    if (environment.token_from_env) globals.bearer_token = *environment.token_from_env;

    const ParsedArgs before = parse_args(args, global_options(), StopAt::first_positional);
    apply_globals(before, globals, /*json_is_global=*/true);
    if (before.positionals().empty() || before.has("help")) {
      if (before.has("help")) {
        environment.out << usage_text();
        return to_int(ExitCode::ok);
      }
      err << usage_text();
      return to_int(ExitCode::usage);
    }

    std::string_view name = before.positionals().front();
    std::span<const std::string> rest = std::span(before.positionals()).subspan(1);
    if (name == "help") {
      if (rest.empty()) {
        environment.out << usage_text();
        return to_int(ExitCode::ok);
      }
      name = rest.front();
      command = find_command(name);
      if (command == nullptr) throw UsageError("unknown command '" + std::string(name) + "'");
      environment.out << command_help(*command);
      return to_int(ExitCode::ok);
    }
    command = find_command(name);
    if (command == nullptr) throw UsageError("unknown command '" + std::string(name) + "'");

    const std::vector<OptionSpec> options = merged_options(*command);
    const ParsedArgs parsed = parse_args(rest, options);
    if (parsed.has("help")) {
      environment.out << command_help(*command);
      return to_int(ExitCode::ok);
    }
    const bool json_is_global = std::ranges::find(command->options, std::string_view("json"),
                                                  &OptionSpec::name) == command->options.end();
    apply_globals(parsed, globals, json_is_global);
    check_globals(globals);

    const std::size_t count = parsed.positionals().size();
    if (count < command->min_positionals) throw UsageError("missing arguments");
    if (count > command->max_positionals) {
      throw UsageError("unexpected argument '" + parsed.positionals()[command->max_positionals] + "'");
    }

    CommandContext context(std::move(globals), environment.out, err, environment.err_is_tty,
                           environment.in);
    return command->run(context, parsed);
  } catch (const UsageError& error) {
    return usage_error(err, error, command);
  } catch (const std::exception& error) {
    return report_error(err, error.what());
  }
}

}  // namespace svdserve::cli
