#pragma once
// Pieces several commands share: the common options, the images named on the command line, how
// a one-answer command starts, and decomposing many images with a few calls in flight.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "client/cli/args.hpp"
#include "client/cli/command.hpp"
#include "client/cli/progress.hpp"
#include "client/cli/report.hpp"
#include "client/client.hpp"
#include "client/text_format.hpp"

namespace svdserve::cli {

inline constexpr std::size_t kDefaultConcurrency = 4;

inline constexpr OptionSpec kRankOption{"rank", "K", "reconstruct at rank K"};
inline constexpr OptionSpec kEnergyOption{"energy", "F",
                                          "the smallest rank keeping this fraction (0, 1] of the energy"};
inline constexpr OptionSpec kMaxRankOption{"max-rank", "R", "singular triplets to keep (default: the server's)"};
inline constexpr OptionSpec kRecursiveOption{"recursive", "", "include sub-folders", 'r'};
inline constexpr OptionSpec kConcurrencyOption{"concurrency", "C", "calls in flight at once (default 4)", 'c'};
inline constexpr OptionSpec kFormatOption{
    "format", "FMT",
    "png or jpeg (server-encoded), u8 or f32 (raw HWC bytes); default from OUT's extension"};
inline constexpr OptionSpec kJpegQualityOption{"jpeg-quality", "N",
                                               "JPEG quality 1..100 (default: the server's, 90)"};
inline constexpr OptionSpec kOutputOption{"output", "OUT", "output file", 'o'};

// Exactly one of --rank K (>= 1) and --energy F (in (0, 1]).
[[nodiscard]] RankChoice rank_choice_from(const ParsedArgs& args);
// --concurrency, at least 1.
[[nodiscard]] std::size_t concurrency_from(const ParsedArgs& args);
// --max-rank, 0 when absent.
[[nodiscard]] std::uint32_t max_rank_from(const ParsedArgs& args);
// The --output option, required.
[[nodiscard]] std::filesystem::path output_from(const ParsedArgs& args);
// --jpeg-quality, 1..100, only with the JPEG format; 0 (the server's default) when absent.
[[nodiscard]] std::uint32_t jpeg_quality_from(const ParsedArgs& args, v1::OutputFormat format);

struct ImageItem {
  std::filesystem::path file;
  std::string id;  // A folder's images: the path relative to the folder, with '/'.
};

// A file (id: explicit_id, else its file name) or every image of a folder. Throws UsageError
// when path does not exist, or explicit_id is given for a folder.
[[nodiscard]] std::vector<ImageItem> collect_images(const std::filesystem::path& path, bool recursive,
                                                    const std::optional<std::string>& explicit_id);

struct DecomposeOutcome {
  grpc::Status status;       // The call's status; OK when the call succeeded.
  std::string local_error;   // Set when the file could not be read (no call was made).
  v1::DecomposeResponse response;
  double elapsed_ms = 0;     // As seen by the client.

  [[nodiscard]] bool ok() const noexcept { return local_error.empty() && status.ok(); }
  [[nodiscard]] std::string error_text() const;
};

// Decomposes every item, concurrency calls at a time, reporting each on stderr in the given style
// and counting it in tally. The outcomes are in the order of items.
[[nodiscard]] std::vector<DecomposeOutcome> decompose_all(CommandContext& context,
                                                          const std::vector<ImageItem>& items,
                                                          std::uint32_t max_rank, std::size_t concurrency,
                                                          ProgressStyle style, ItemTally& tally);

// How a command that shows one answer starts: the error when the call failed, else with --json
// the answer as JSON. Returns the exit code when that was all; nullopt when the text follows.
template <class Response>
[[nodiscard]] std::optional<int> error_or_json(CommandContext& context, const CallResult<Response>& result) {
  if (!result) return report_error(context.err(), result.status());
  if (!context.json()) return std::nullopt;
  print_json(context.out(), *result);
  return to_int(ExitCode::ok);
}

[[nodiscard]] double elapsed_ms_since(std::chrono::steady_clock::time_point start);

}  // namespace svdserve::cli
