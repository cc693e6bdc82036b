#include "client/cli/args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace svdserve::cli {
namespace {

const OptionSpec* find_long(std::span<const OptionSpec> specs, std::string_view name) {
  const auto found = std::ranges::find(specs, name, &OptionSpec::name);
  return found == specs.end() ? nullptr : &*found;
}

const OptionSpec* find_short(std::span<const OptionSpec> specs, char name) {
  const auto found = std::ranges::find(specs, name, &OptionSpec::short_name);
  return found == specs.end() ? nullptr : &*found;
}

template <class Number>
Number parse_number(std::string_view text, std::string_view what, std::string_view kind) {
  Number value{};
  const char* const end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc{} || stop != end) {
    throw UsageError(std::string(what) + " expects " + std::string(kind) + ", got '" +
                     std::string(text) + "'");
  }
  return value;
}

}  // namespace

bool ParsedArgs::has(std::string_view name) const { return values_.find(name) != values_.end(); }

std::optional<std::string> ParsedArgs::value(std::string_view name) const {
  const auto found = values_.find(name);
  if (found == values_.end()) return std::nullopt;
  return found->second.back();
}

std::string ParsedArgs::value_or(std::string_view name, std::string_view fallback) const {
  return value(name).value_or(std::string(fallback));
}

std::vector<std::string> ParsedArgs::values(std::string_view name) const {
  const auto found = values_.find(name);
  return found == values_.end() ? std::vector<std::string>{} : found->second;
}

void ParsedArgs::set(std::string_view name, std::string value) {
  const auto found = values_.find(name);
  if (found == values_.end()) {
    values_.emplace(std::string(name), std::vector<std::string>{std::move(value)});
  } else {
    found->second.push_back(std::move(value));
  }
}

ParsedArgs parse_args(std::span<const std::string> args, std::span<const OptionSpec> specs, StopAt stop) {
  ParsedArgs parsed;
  bool options_ended = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const bool is_option = !options_ended && arg.size() > 1 && arg[0] == '-';
    if (!is_option) {
      if (stop == StopAt::first_positional) {
        for (std::size_t j = i; j < args.size(); ++j) parsed.add_positional(args[j]);
        break;
      }
      parsed.add_positional(std::string(arg));
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }

    const OptionSpec* spec = nullptr;
    std::optional<std::string> inline_value;
    if (arg.starts_with("--")) {
      std::string_view name = arg.substr(2);
      if (const auto equals = name.find('='); equals != std::string_view::npos) {
        inline_value = std::string(name.substr(equals + 1));
        name = name.substr(0, equals);
      }
      spec = find_long(specs, name);
      if (spec == nullptr) throw UsageError("unknown option --" + std::string(name));
    } else {
      if (arg.size() != 2) throw UsageError("unknown option " + std::string(arg));
      spec = find_short(specs, arg[1]);
      if (spec == nullptr) throw UsageError("unknown option " + std::string(arg));
    }

    const std::string shown = "--" + std::string(spec->name);
    if (!spec->takes_value()) {
      if (inline_value) throw UsageError(shown + " takes no value");
      parsed.set(spec->name, "");
    } else if (inline_value) {
      parsed.set(spec->name, std::move(*inline_value));
    } else {
      if (i + 1 >= args.size()) throw UsageError(shown + " needs a value (" + std::string(spec->value_name) + ")");
      parsed.set(spec->name, args[++i]);
    }
  }
  return parsed;
}

std::uint32_t parse_uint32(std::string_view text, std::string_view what) {
  return parse_number<std::uint32_t>(text, what, "a non-negative integer");
}

std::uint64_t parse_uint64(std::string_view text, std::string_view what) {
  return parse_number<std::uint64_t>(text, what, "a non-negative integer");
}

double parse_double(std::string_view text, std::string_view what) {
  const auto value = parse_number<double>(text, what, "a number");
  if (!std::isfinite(value)) throw UsageError(std::string(what) + " expects a finite number");
  return value;
}

std::vector<std::uint32_t> parse_rank_list(std::string_view text, std::string_view what) {
  std::vector<std::uint32_t> ranks;
  while (true) {
    const auto comma = text.find(',');
    const auto rank = parse_uint32(text.substr(0, comma), what);
    if (rank == 0) throw UsageError(std::string(what) + " expects ranks of at least 1");
    ranks.push_back(rank);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return ranks;
}

std::chrono::milliseconds parse_seconds(std::string_view text, std::string_view what) {
  const double seconds = parse_double(text, what);
  constexpr double kMaxSeconds = 365.0 * 24 * 3600;  // Keeps the milliseconds in range.
  if (seconds < 0 || seconds > kMaxSeconds) {
    throw UsageError(std::string(what) + " expects seconds between 0 and " + std::to_string(static_cast<std::int64_t>(kMaxSeconds)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(seconds * 1000.0)));
}

}  // namespace svdserve::cli
