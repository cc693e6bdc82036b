#include "client/cli/commands/common.hpp"

#include <chrono>
#include <stdexcept>

#include "client/cli/parallel.hpp"
#include "client/cli/progress.hpp"
#include "client/image_files.hpp"

namespace svdserve::cli {

RankChoice rank_choice_from(const ParsedArgs& args) {
  const auto rank = args.value("rank");
  const auto energy = args.value("energy");
  if (rank.has_value() == energy.has_value()) throw UsageError("give one of --rank K and --energy F");
  if (rank) {
    const auto k = parse_uint32(*rank, "--rank");
    if (k == 0) throw UsageError("--rank must be at least 1");
    return Rank{k};
  }
  const double fraction = parse_double(*energy, "--energy");
  if (fraction <= 0.0 || fraction > 1.0) throw UsageError("--energy must be in (0, 1]");
  return EnergyFraction{fraction};
}

std::size_t concurrency_from(const ParsedArgs& args) {
  const auto text = args.value("concurrency");
  if (!text) return kDefaultConcurrency;
  const auto concurrency = parse_uint32(*text, "--concurrency");
  if (concurrency == 0) throw UsageError("--concurrency must be at least 1");
  return concurrency;
}

std::uint32_t max_rank_from(const ParsedArgs& args) {
  const auto text = args.value("max-rank");
  return text ? parse_uint32(*text, "--max-rank") : 0;
}

std::filesystem::path output_from(const ParsedArgs& args) {
  const auto text = args.value("output");
  if (!text || text->empty()) throw UsageError("-o OUT is required");
  return *text;
}

std::uint32_t jpeg_quality_from(const ParsedArgs& args, v1::OutputFormat format) {
  const auto text = args.value("jpeg-quality");
  if (!text) return 0;
  if (format != v1::OUTPUT_FORMAT_JPEG) throw UsageError("--jpeg-quality applies to the jpeg format");
  const auto quality = parse_uint32(*text, "--jpeg-quality");
  if (quality < 1 || quality > 100) throw UsageError("--jpeg-quality must be 1..100");
  return quality;
}

std::vector<ImageItem> collect_images(const std::filesystem::path& path, bool recursive,
                                      const std::optional<std::string>& explicit_id) {
  std::error_code error;
  // A file that is not there is exit code 1, as for every command that reads one (not a usage
  // error: the command line was right).
  if (!std::filesystem::exists(path, error)) {
    throw std::runtime_error("no such file or folder: " + path.string());
  }
  if (!std::filesystem::is_directory(path, error)) {
    return {ImageItem{path, explicit_id.value_or(path.filename().string())}};
  }
  if (explicit_id) throw UsageError("--id names one image; a folder's images are named by their file names");
  std::vector<ImageItem> items;
  for (auto& file : list_image_files(path, recursive)) {
    std::string id = file.lexically_relative(path).generic_string();
    items.push_back(ImageItem{std::move(file), std::move(id)});
  }
  return items;
}

std::string DecomposeOutcome::error_text() const {
  return local_error.empty() ? format_status(status) : local_error;
}

double elapsed_ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::vector<DecomposeOutcome> decompose_all(CommandContext& context, const std::vector<ImageItem>& items,
                                            std::uint32_t max_rank, std::size_t concurrency,
                                            ProgressStyle style, ItemTally& tally) {
  std::vector<DecomposeOutcome> outcomes(items.size());
  const ServerSet& servers = context.servers();
  ProgressReporter progress(context.err(), items.size(), style, "decompose");
  parallel_for(items.size(), concurrency, [&](std::size_t i) {
    DecomposeOutcome& outcome = outcomes[i];
    const auto start = std::chrono::steady_clock::now();
    std::string bytes;
    try {
      bytes = read_file_bytes(items[i].file);
    } catch (const std::runtime_error& error) {
      outcome.local_error = error.what();
    }
    if (outcome.local_error.empty()) {
      v1::DecomposeRequest request;
      request.mutable_image()->set_encoded(std::move(bytes));
      request.set_max_rank(max_rank);
      request.set_id(items[i].id);
      auto result = servers.call(request.id(), [&](const Client& client) { return client.decompose(request); });
      outcome.elapsed_ms = elapsed_ms_since(start);
      if (result) {
        outcome.response = std::move(result).value();
      } else {
        outcome.status = result.status();
      }
    }
    if (outcome.ok()) {
      tally.succeeded();
      const auto& response = outcome.response;
      progress.item_done(items[i].id, true,
                         shape_text(response.shape()) + " rank " + std::to_string(response.rank_kept()) +
                             "  " + fixed_text(outcome.elapsed_ms, 1) + " ms");
    } else {
      if (outcome.local_error.empty()) {
        tally.failed(outcome.status.error_code());
      } else {
        tally.failed_locally();
      }
      progress.item_done(items[i].id, false, outcome.error_text());
    }
  });
  return outcomes;
}

}  // namespace svdserve::cli
