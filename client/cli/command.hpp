#pragma once
// What a subcommand is, and what it gets to run: the global options, the output streams and the
// servers' clients created on first use (so usage errors never touch the network).

#include <chrono>
#include <cstddef>
#include <istream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/args.hpp"
#include "client/client.hpp"
#include "client/server_set.hpp"

namespace svdserve::cli {

struct GlobalOptions {
  // --server: one address (a server or a load balancer), or several replicas to route between.
  std::vector<std::string> servers{std::string(kDefaultTarget)};
  std::chrono::milliseconds timeout = kDefaultCallTimeout;
  bool json = false;
  std::optional<ClientTls> tls{};  // --tls, --ca, --cert, --key; nullopt: plaintext
  std::string bearer_token{};  // --token-file's first line, else $SVDSERVE_TOKEN; empty: none
};

class CommandContext {
 public:
  CommandContext(GlobalOptions globals, std::ostream& out, std::ostream& err, bool err_is_tty,
                 std::istream* in = nullptr)
      : globals_(std::move(globals)), out_(out), err_(err), err_is_tty_(err_is_tty), in_(in) {}

  [[nodiscard]] const GlobalOptions& globals() const noexcept { return globals_; }
  [[nodiscard]] std::ostream& out() const noexcept { return out_; }
  [[nodiscard]] std::ostream& err() const noexcept { return err_; }
  [[nodiscard]] bool err_is_tty() const noexcept { return err_is_tty_; }
  [[nodiscard]] bool json() const noexcept { return globals_.json; }
  // Standard input; nullptr when the CLI was given none (tests).
  [[nodiscard]] std::istream* in() const noexcept { return in_; }

  // The clients of --server with the --timeout deadline, the TLS options and the bearer token;
  // created on the first call. Route calls through servers().call(id, ...).
  [[nodiscard]] const ServerSet& servers();

 private:
  GlobalOptions globals_;
  std::ostream& out_;
  std::ostream& err_;
  bool err_is_tty_;
  std::istream* in_;
  std::optional<ServerSet> servers_;
};

struct Command {
  std::string_view name;
  std::string_view synopsis;  // What follows the name in the usage line.
  std::string_view summary;   // One line for the command list.
  std::vector<OptionSpec> options{};
  std::size_t min_positionals = 0;
  std::size_t max_positionals = 0;
  // Returns the exit code; throws UsageError for a bad command line.
  int (*run)(CommandContext& context, const ParsedArgs& args) = nullptr;
};

// One per file in client/cli/commands/.
[[nodiscard]] std::vector<Command> decompose_commands();    // decompose
[[nodiscard]] std::vector<Command> reconstruct_commands();  // reconstruct, compress
[[nodiscard]] std::vector<Command> run_commands();          // run
[[nodiscard]] std::vector<Command> spectrum_commands();     // spectrum
[[nodiscard]] std::vector<Command> store_commands();        // list, info, delete, load-dir
[[nodiscard]] std::vector<Command> server_commands();       // stats, server-info, health, profile
[[nodiscard]] std::vector<Command> bench_commands();        // bench
[[nodiscard]] std::vector<Command> token_commands();        // token

}  // namespace svdserve::cli
