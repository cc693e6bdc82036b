// The server's store of decomposed images: list, info, delete, load-dir.

#include <algorithm>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "client/cli/commands/common.hpp"

namespace svdserve::cli {
namespace {

std::string_view state_name(v1::ImageState state) noexcept {
  switch (state) {
    case v1::IMAGE_STATE_RESIDENT: return "resident";
    case v1::IMAGE_STATE_EVICTED: return "evicted";
    case v1::IMAGE_STATE_STORED: return "stored";
    default: return "unknown";
  }
}

// Local time, "2024-05-01 12:34:56"; "-" for 0.
std::string time_text(std::int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  constexpr std::int64_t kMsPerSecond = 1000;
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / kMsPerSecond);
  std::tm local{};
  localtime_r(&seconds, &local);
  std::ostringstream text;
  text << std::put_time(&local, "%Y-%m-%d %H:%M:%S");
  return text.str();
}

// Column widths of the list table.
constexpr int kShapeWidth = 15;
constexpr int kRankWidth = 6;
constexpr int kBytesWidth = 12;
constexpr int kStateWidth = 10;

// Follows every page of ListImages. Text rows are printed as each page comes, so that a large
// store does not have to fit in the client's memory; --json gathers them into one answer.
int run_list(CommandContext& context, const ParsedArgs& args) {
  v1::ListImagesResponse gathered;
  std::string page_token;
  std::size_t id_width = 2;
  std::size_t images = 0;
  auto& out = context.out();
  // Every page from one server: replicas hold different images, and a page token is one
  // server's place in its own list.
  const ServerSet& servers = context.servers();
  const Client& lister = servers.client(servers.order_for({}).front());
  do {
    auto page = lister.list_images(args.has("all"), 0, page_token);
    if (!page) return report_error(context.err(), page.status());
    page_token = page->next_page_token();
    gathered.set_bytes_resident(page->bytes_resident());
    gathered.set_budget_bytes(page->budget_bytes());
    if (context.json()) {
      for (auto& image : *page->mutable_images()) *gathered.add_images() = std::move(image);
      continue;
    }
    if (images == 0) {
      for (const auto& image : page->images()) id_width = std::max(id_width, image.id().size());
      out << std::left << std::setw(static_cast<int>(id_width)) << "ID" << "  " << std::setw(kShapeWidth) << "SHAPE"
          << std::setw(kRankWidth) << "RANK" << std::setw(kBytesWidth) << "RESIDENT" << std::setw(kStateWidth)
          << "STATE" << "LAST USED\n";
    }
    for (const auto& image : page->images()) {
      out << std::left << std::setw(static_cast<int>(id_width)) << image.id() << "  " << std::setw(kShapeWidth)
          << shape_text(image.shape()) << std::setw(kRankWidth) << image.rank_kept() << std::setw(kBytesWidth)
          << bytes_text(image.bytes_resident()) << std::setw(kStateWidth) << state_name(image.state())
          << time_text(image.last_used_unix_ms()) << '\n';
    }
    images += static_cast<std::size_t>(page->images_size());
  } while (!page_token.empty());
  if (context.json()) {
    print_json(out, gathered);
    return to_int(ExitCode::ok);
  }
  out << std::right << images << " images, " << bytes_text(gathered.bytes_resident()) << " of "
      << bytes_text(gathered.budget_bytes()) << " used\n";
  return to_int(ExitCode::ok);
}

int run_info(CommandContext& context, const ParsedArgs& args) {
  const bool with_values = args.has("singular-values");
  const auto& id = args.positionals().front();
  const auto result =
      context.servers().call(id, [&](const Client& client) { return client.get_image(id, with_values); });
  if (const auto done = error_or_json(context, result)) return *done;
  const auto& info = result->info();
  auto& out = context.out();
  out << "id         " << info.id() << '\n'
      << "shape      " << shape_text(info.shape()) << '\n'
      << "rank kept  " << info.rank_kept() << '\n'
      << "resident   " << bytes_text(info.bytes_resident()) << '\n'
      << "state      " << state_name(info.state()) << '\n'
      << "created    " << time_text(info.created_unix_ms()) << '\n'
      << "last used  " << time_text(info.last_used_unix_ms()) << '\n';
  for (int channel = 0; channel < result->singular_values_size(); ++channel) {
    out << "singular values, channel " << channel << ":";
    for (const float value : result->singular_values(channel).values()) out << ' ' << value;
    out << '\n';
  }
  return to_int(ExitCode::ok);
}

int run_delete(CommandContext& context, const ParsedArgs& args) {
  const auto& id = args.positionals().front();
  const auto result = context.servers().call(id, [&](const Client& client) { return client.delete_image(id); });
  if (!result) return report_error(context.err(), result.status());
  if (context.json()) {
    print_json(context.out(), *result);
  } else {
    context.out() << "deleted " << id << ", freed " << bytes_text(result->bytes_freed()) << '\n';
  }
  return to_int(ExitCode::ok);
}

int run_load_dir(CommandContext& context, const ParsedArgs& args) {
  const auto result = context.servers().call({}, [&](const Client& client) {
    return client.load_directory(args.positionals().front(), max_rank_from(args), args.has("recursive"));
  });
  if (!result) return report_error(context.err(), result.status());
  const bool any_failed = result->failed() > 0;
  if (context.json()) {
    print_json(context.out(), *result);
  } else {
    for (const auto& item : result->results()) {
      if (item.status().code() == 0) {
        context.out() << "ok    " << item.id() << "  " << shape_text(item.shape()) << " rank " << item.rank_kept()
                      << '\n';
      } else {
        context.out() << "FAIL  " << item.id() << ": " << format_status(item_status(item.status())) << '\n';
      }
    }
    context.out() << "loaded " << result->loaded() << ", failed " << result->failed() << '\n';
  }
  return to_int(any_failed ? ExitCode::failed : ExitCode::ok);
}

}  // namespace

std::vector<Command> store_commands() {
  return {
      Command{
          .name = "list",
          .synopsis = "[--all]",
          .summary = "list the resident images, in id order",
          .options = {{"all", "", "include evicted images"}},
          .run = run_list,
      },
      Command{
          .name = "info",
          .synopsis = "ID [--singular-values]",
          .summary = "show one image",
          .options = {{"singular-values", "", "print the kept singular values of each channel"}},
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_info,
      },
      Command{
          .name = "delete",
          .synopsis = "ID",
          .summary = "drop an image from the server",
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_delete,
      },
      Command{
          .name = "load-dir",
          .synopsis = "PATH [--max-rank R] [--recursive]",
          .summary = "have the server decompose every image of a folder below one of its load roots",
          .options = {kMaxRankOption, kRecursiveOption},
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_load_dir,
      },
  };
}

}  // namespace svdserve::cli
