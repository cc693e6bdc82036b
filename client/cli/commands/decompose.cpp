// decompose FILE|DIR: send images to the server to be decomposed and kept.

#include <chrono>

#include "client/cli/commands/common.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

void write_json(std::ostream& out, const std::vector<ImageItem>& items,
                const std::vector<DecomposeOutcome>& outcomes, const ItemTally& tally, double elapsed_ms) {
  JsonWriter json;
  json.begin_object().key("results").begin_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto& outcome = outcomes[i];
    json.begin_object()
        .field("file", items[i].file.string())
        .field("id", outcome.ok() ? outcome.response.id() : items[i].id)
        .field("ok", outcome.ok());
    if (outcome.ok()) {
      const auto& response = outcome.response;
      json.field("width", response.shape().width())
          .field("height", response.shape().height())
          .field("channels", response.shape().channels())
          .field("rank_kept", response.rank_kept())
          .field("bytes_resident", response.bytes_resident())
          .field("server_total_ms", response.timings().total_us() / 1000.0)
          .field("elapsed_ms", outcome.elapsed_ms);
    } else {
      json.field("code", outcome.local_error.empty() ? std::string(status_code_name(outcome.status.error_code()))
                                                     : std::string("LOCAL"))
          .field("message", outcome.local_error.empty() ? outcome.status.error_message() : outcome.local_error);
    }
    json.end_object();
  }
  json.end_array()
      .field("succeeded", std::uint64_t{tally.succeeded_count()})
      .field("failed", std::uint64_t{tally.failed_count()})
      .field("elapsed_s", elapsed_ms / 1000.0)
      .end_object();
  out << json.str() << '\n';
}

int run_decompose(CommandContext& context, const ParsedArgs& args) {
  const std::filesystem::path path = args.positionals().front();
  const auto max_rank = max_rank_from(args);
  const auto concurrency = concurrency_from(args);
  const bool is_folder = std::filesystem::is_directory(path);
  auto items = collect_images(path, args.has("recursive"), args.value("id"));
  if (items.empty()) return report_error(context.err(), "no image files in " + path.string());
  // Two folders with a file of one name would give one id, the second replacing the first.
  if (const auto prefix = args.value("id-prefix")) {
    for (ImageItem& item : items) item.id = *prefix + item.id;
  }

  ItemTally tally;
  const auto start = std::chrono::steady_clock::now();
  const auto style = is_folder ? progress_style_for(context.err_is_tty()) : ProgressStyle::quiet;
  const auto outcomes = decompose_all(context, items, max_rank, concurrency, style, tally);
  const double elapsed_ms = elapsed_ms_since(start);

  if (context.json()) {
    write_json(context.out(), items, outcomes, tally, elapsed_ms);
    return tally.exit_code();
  }
  if (!is_folder) {
    const auto& outcome = outcomes.front();
    if (!outcome.ok()) {
      return outcome.local_error.empty() ? report_error(context.err(), outcome.status)
                                         : report_error(context.err(), outcome.local_error);
    }
    const auto& response = outcome.response;
    context.out() << "id " << response.id() << ": " << shape_text(response.shape()) << ", rank kept "
                  << response.rank_kept() << ", " << bytes_text(response.bytes_resident()) << " resident, "
                  << ms_text(response.timings().total_us()) << " ms on the server\n";
    return tally.exit_code();
  }

  std::uint64_t bytes_resident = 0;
  for (const auto& outcome : outcomes) {
    if (outcome.ok()) bytes_resident += outcome.response.bytes_resident();
  }
  context.out() << "decomposed " << tally.succeeded_count() << " of " << items.size() << " images";
  if (tally.failed_count() > 0) context.out() << " (" << tally.failed_count() << " failed)";
  context.out() << " in " << fixed_text(elapsed_ms / 1000.0, 2) << " s, " << bytes_text(bytes_resident)
                << " resident\n";
  return tally.exit_code();
}

}  // namespace

std::vector<Command> decompose_commands() {
  return {Command{
      .name = "decompose",
      .synopsis = "FILE|DIR [--max-rank R] [--id ID] [--id-prefix P] [--recursive] [--concurrency C]",
      .summary = "decompose an image, or every image of a folder (ids: file names relative to it)",
      .options = {kMaxRankOption,
                  {"id", "ID", "id of a single image (default: its file name)"},
                  {"id-prefix", "P",
                   "put P before every id (\"set1/\"): ids are file names relative to the folder, "
                   "so two folders with a file of one name would otherwise share its id"},
                  kRecursiveOption,
                  kConcurrencyOption},
      .min_positionals = 1,
      .max_positionals = 1,
      .run = run_decompose,
  }};
}

}  // namespace svdserve::cli
