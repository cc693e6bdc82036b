// run FILE|DIR --rank K[,K2...] -o OUTDIR: decompose, then write every image at every rank,
// through several ReconstructStream calls at once; with --contact-sheet, one picture of them all.

#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "client/cli/commands/common.hpp"
#include "client/cli/contact_sheet.hpp"
#include "client/cli/contact_sheet_files.hpp"
#include "client/cli/image_output.hpp"
#include "client/cli/parallel.hpp"
#include "client/cli/progress.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

// Requests per ReconstructStream call: long enough to keep a stream busy, short enough that one
// --timeout deadline covers it.
constexpr std::size_t kRequestsPerStream = 16;

struct OutputItem {
  std::size_t image = 0;  // Index into the items.
  std::uint32_t rank = 0;
  std::filesystem::path file{};
  // Filled in when done.
  bool ok = false;
  std::string error{};
  double relative_error = 0;
};

// OUTDIR/<relative folder>/<stem>_k<K>; images whose stems collide (a.png, a.jpg) keep their
// extension in the name (a_png_k8.png, a_jpg_k8.png).
std::vector<std::filesystem::path> output_stems(const std::filesystem::path& out_dir,
                                                const std::vector<ImageItem>& items) {
  std::vector<std::filesystem::path> stems;
  std::map<std::filesystem::path, int> uses;
  for (const auto& item : items) {
    const std::filesystem::path relative(item.id);
    stems.push_back(out_dir / relative.parent_path() / relative.stem());
    ++uses[stems.back()];
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (uses[stems[i]] > 1) {
      std::string name = std::filesystem::path(items[i].id).filename().string();
      std::ranges::replace(name, '.', '_');
      stems[i].replace_filename(name);
    }
  }
  return stems;
}

void write_json(std::ostream& out, std::size_t image_count, std::size_t decomposed,
                const std::vector<std::uint32_t>& ranks, const std::vector<OutputItem>& outputs,
                std::size_t files_written, std::size_t errors, double elapsed_ms,
                const std::optional<std::string>& sheet_file, bool sheet_written) {
  JsonWriter json;
  json.begin_object().field("images", std::uint64_t{image_count}).field("decomposed", std::uint64_t{decomposed});
  json.key("ranks").begin_array();
  for (const auto rank : ranks) json.value(rank);
  json.end_array()
      .field("files_written", std::uint64_t{files_written})
      .field("errors", std::uint64_t{errors})
      .field("elapsed_s", elapsed_ms / 1000.0);
  json.key("outputs").begin_array();
  for (const auto& output : outputs) {
    json.begin_object().field("file", output.file.string()).field("rank", output.rank).field("ok", output.ok);
    if (output.ok) {
      json.field("relative_error", output.relative_error);
    } else {
      json.field("error", output.error);
    }
    json.end_object();
  }
  json.end_array();
  if (sheet_file) {
    json.key("contact_sheet").begin_object().field("file", *sheet_file).field("ok", sheet_written).end_object();
  }
  json.end_object();
  out << json.str() << '\n';
}

// One row per decomposed image, in image order, read back from the files written (one image's
// full-size pixels in memory at a time); then the sheet. Returns the error, empty when written.
std::string write_contact_sheet(const std::filesystem::path& sheet_file, int max_tile_side_px,
                                const std::vector<ImageItem>& items, const std::vector<DecomposeOutcome>& decomposed,
                                const std::vector<OutputItem>& outputs) {
  std::vector<SheetRow> rows;
  try {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!decomposed[i].ok()) continue;
      std::vector<RankFile> ranks;
      for (const auto& output : outputs) {
        if (output.image == i) {
          ranks.push_back(RankFile{.rank = output.rank, .file = output.ok ? output.file : std::filesystem::path()});
        }
      }
      rows.push_back(read_sheet_row(items[i].id, items[i].file, ranks, max_tile_side_px));
    }
    if (rows.empty()) return "no image to put on the contact sheet";
    static_cast<void>(write_image_file(sheet_file, draw_contact_sheet(rows, max_tile_side_px)));
  } catch (const std::exception& error) {  // OpenCV's errors too: the run still reports
    return error.what();
  }
  return {};
}

// --tile-size, only with --contact-sheet.
int tile_size_from(const ParsedArgs& args, bool has_sheet) {
  constexpr std::uint32_t kMinTileSidePx = 16;
  constexpr std::uint32_t kMaxTileSidePx = 4096;
  const auto text = args.value("tile-size");
  if (!text) return kDefaultMaxTileSidePx;
  if (!has_sheet) throw UsageError("--tile-size applies to --contact-sheet");
  const auto size = parse_uint32(*text, "--tile-size");
  if (size < kMinTileSidePx || size > kMaxTileSidePx) throw UsageError("--tile-size must be 16..4096");
  return static_cast<int>(size);
}

int run_run(CommandContext& context, const ParsedArgs& args) {
  const std::filesystem::path path = args.positionals().front();
  const auto rank_text = args.value("rank");
  if (!rank_text) throw UsageError("--rank K[,K2...] is required");
  const auto ranks = parse_rank_list(*rank_text, "--rank");
  const auto out_dir = output_from(args);
  const auto max_rank = max_rank_from(args);
  const auto concurrency = concurrency_from(args);
  const auto format = parse_output_format(args.value_or("format", "png"));
  if (format != v1::OUTPUT_FORMAT_PNG && format != v1::OUTPUT_FORMAT_JPEG) {
    throw UsageError("run writes png or jpeg files; --format expects png or jpeg");
  }
  const auto jpeg_quality = jpeg_quality_from(args, format);
  const auto sheet_file = args.value("contact-sheet");
  if (sheet_file) require_picture_name(*sheet_file, "--contact-sheet");
  const int max_tile_side_px = tile_size_from(args, sheet_file.has_value());
  const auto items = collect_images(path, args.has("recursive"), std::nullopt);
  if (items.empty()) return report_error(context.err(), "no image files in " + path.string());
  if (sheet_file) {
    const cv::Size2d largest = largest_sheet_size(items.size(), ranks.size(), max_tile_side_px);
    if (std::max(largest.width, largest.height) > kMaxSheetSidePx) {
      throw UsageError("a contact sheet of " + std::to_string(items.size()) + " images at " +
                       std::to_string(ranks.size()) + " ranks can reach " + std::to_string(std::lround(largest.width)) +
                       " x " + std::to_string(std::lround(largest.height)) + " pixels, above " +
                       std::to_string(kMaxSheetSidePx) + " on a side: give fewer images or a smaller --tile-size");
    }
  }

  const auto start = std::chrono::steady_clock::now();
  ItemTally tally;
  const auto style = progress_style_for(context.err_is_tty());
  const auto decomposed = decompose_all(context, items, max_rank, concurrency, style, tally);

  // One output per decomposed image and rank, in image order.
  const auto stems = output_stems(out_dir, items);
  std::vector<OutputItem> outputs;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!decomposed[i].ok()) continue;
    for (const auto rank : ranks) {
      auto file = stems[i];
      file += std::string("_k").append(std::to_string(rank)).append(".").append(encoded_extension(format));
      outputs.push_back(OutputItem{.image = i, .rank = rank, .file = std::move(file)});
    }
  }
  std::error_code error;
  for (const auto& output : outputs) {
    std::filesystem::create_directories(output.file.parent_path(), error);
    if (error) {
      return report_error(context.err(), "cannot create " + output.file.parent_path().string() + ": " +
                                             error.message());
    }
  }

  const ServerSet& servers = context.servers();
  const std::size_t stream_count = (outputs.size() + kRequestsPerStream - 1) / kRequestsPerStream;
  std::size_t files_written = 0;
  std::mutex files_mutex;  // Guards files_written.
  {
    ProgressReporter progress(context.err(), outputs.size(), style, "reconstruct");
    const auto finish_item = [&](OutputItem& output) {
      if (output.ok) {
        tally.succeeded();
        const std::scoped_lock lock(files_mutex);
        ++files_written;
      }
      progress.item_done(output.file.filename().string(), output.ok,
                         output.ok ? "relative error " + fixed_text(output.relative_error, 6) : output.error);
    };
    parallel_for(stream_count, concurrency, [&](std::size_t stream) {
      const std::size_t first = stream * kRequestsPerStream;
      const std::size_t count = std::min(kRequestsPerStream, outputs.size() - first);
      std::vector<v1::ReconstructRequest> requests(count);
      for (std::size_t j = 0; j < count; ++j) {
        const auto& output = outputs[first + j];
        requests[j].set_id(decomposed[output.image].response.id());
        requests[j].set_rank(output.rank);
        requests[j].set_format(format);
        requests[j].set_jpeg_quality(jpeg_quality);
      }
      // A stream goes where its first image does; made once more after UNAVAILABLE, it resumes
      // after the last answered request.
      std::size_t answered = 0;
      const auto status = servers.call(requests.front().id(), [&](const Client& client) {
        const std::size_t resumed = answered;
        return client.reconstruct_stream(
            std::span(requests).subspan(resumed), [&](std::size_t j, v1::ReconstructStreamResponse& response) {
              OutputItem& output = outputs[first + resumed + j];
              answered = resumed + j + 1;
              if (const grpc::Status item = item_status(response.status()); !item.ok()) {
                output.error = format_status(item);
                tally.failed(item.error_code());
              } else {
                try {
                  write_output_image(output.file, format, response.result().shape(),
                                     response.result().pixels());
                  output.ok = true;
                  output.relative_error = response.result().relative_error();
                } catch (const std::runtime_error& write_error) {
                  output.error = write_error.what();
                  tally.failed_locally();
                }
              }
              finish_item(output);
            });
      });
      // Whatever the stream did not answer failed with the stream's status.
      for (std::size_t j = answered; j < count; ++j) {
        OutputItem& output = outputs[first + j];
        output.error = format_status(status);
        tally.failed(status.error_code());
        finish_item(output);
      }
    });
  }

  std::string sheet_error;
  if (sheet_file) {
    sheet_error = write_contact_sheet(*sheet_file, max_tile_side_px, items, decomposed, outputs);
    if (!sheet_error.empty()) {
      context.err() << "error: contact sheet: " << sheet_error << '\n';
      tally.failed_locally();
    }
  }

  const double elapsed_ms = elapsed_ms_since(start);
  const std::size_t decomposed_count =
      static_cast<std::size_t>(std::ranges::count_if(decomposed, &DecomposeOutcome::ok));
  if (context.json()) {
    write_json(context.out(), items.size(), decomposed_count, ranks, outputs, files_written,
               tally.failed_count(), elapsed_ms, sheet_file, sheet_error.empty());
    return tally.exit_code();
  }
  std::string rank_list;
  for (const auto rank : ranks) {
    if (!rank_list.empty()) rank_list += ',';
    rank_list += std::to_string(rank);
  }
  context.out() << "images " << items.size() << " (" << decomposed_count << " decomposed), ranks " << rank_list
                << ", files written " << files_written << " to " << out_dir.string() << ", errors "
                << tally.failed_count() << ", " << fixed_text(elapsed_ms / 1000.0, 2) << " s\n";
  if (sheet_file && sheet_error.empty()) context.out() << "contact sheet " << *sheet_file << '\n';
  return tally.exit_code();
}

}  // namespace

std::vector<Command> run_commands() {
  return {Command{
      .name = "run",
      .synopsis = "FILE|DIR --rank K[,K2...] -o OUTDIR [--max-rank R] [--recursive] [--concurrency C]\n"
                  "       [--format png|jpeg] [--jpeg-quality N] [--contact-sheet FILE [--tile-size PX]]",
      .summary = "decompose images, then write OUTDIR/<stem>_k<K>.png (or .jpg) for every rank (streamed)",
      .options = {{"rank", "K[,K2...]", "ranks to reconstruct at"},
                  {"output", "OUTDIR", "folder for the image files (created)", 'o'},
                  {"format", "FMT", "png (default) or jpeg, encoded by the server"},
                  kJpegQualityOption,
                  kMaxRankOption,
                  kRecursiveOption,
                  kConcurrencyOption,
                  {"contact-sheet", "FILE",
                   "also write one picture (format from FILE's extension): a row per image, its "
                   "original then every rank's output, each captioned with k, the relative error "
                   "against the original and the bytes of factors kept"},
                  {"tile-size", "PX", "the longer side of a contact sheet's tiles, at most (default 256)"}},
      .min_positionals = 1,
      .max_positionals = 1,
      .run = run_run,
  }};
}

}  // namespace svdserve::cli
