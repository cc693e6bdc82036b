#pragma once
// A small command-line parser: long options (--name VALUE, --name=VALUE), one-letter aliases
// (-o VALUE), flags, positionals in any order, and "--" to end the options.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace svdserve::cli {

// A bad command line; the CLI prints it with the usage and exits with ExitCode::usage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string_view name;        // Long name without the dashes: "max-rank".
  std::string_view value_name;  // Empty for a flag; else shown in the help: "R".
  std::string_view help;
  char short_name = '\0';       // '\0': none.

  [[nodiscard]] bool takes_value() const noexcept { return !value_name.empty(); }
};

class ParsedArgs {
 public:
  [[nodiscard]] bool has(std::string_view name) const;
  // The value of the last occurrence of the option; nullopt when absent.
  [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
  [[nodiscard]] std::string value_or(std::string_view name, std::string_view fallback) const;
  // Every occurrence's value, in order (a repeatable option); empty when absent.
  [[nodiscard]] std::vector<std::string> values(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& positionals() const noexcept { return positionals_; }

  // Adds an occurrence of the option.
  void set(std::string_view name, std::string value);
  void add_positional(std::string value) { positionals_.push_back(std::move(value)); }

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> values_;  // Flags map to {""}.
  std::vector<std::string> positionals_;
};

enum class StopAt {
  end,               // Parse everything.
  first_positional,  // The first positional and everything after it are left as positionals.
};

// Throws UsageError for an unknown option, a missing value, or a value given to a flag.
[[nodiscard]] ParsedArgs parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs,
                                    StopAt stop = StopAt::end);

// Typed values; "what" names the option in the error ("--rank").
[[nodiscard]] std::uint32_t parse_uint32(std::string_view text, std::string_view what);
[[nodiscard]] std::uint64_t parse_uint64(std::string_view text, std::string_view what);
[[nodiscard]] double parse_double(std::string_view text, std::string_view what);
// "4,8,16" -> {4, 8, 16}; every value >= 1.
[[nodiscard]] std::vector<std::uint32_t> parse_rank_list(std::string_view text, std::string_view what);
// Seconds, fractions allowed, >= 0: "1.5" -> 1500 ms.
[[nodiscard]] std::chrono::milliseconds parse_seconds(std::string_view text, std::string_view what);

}  // namespace svdserve::cli
