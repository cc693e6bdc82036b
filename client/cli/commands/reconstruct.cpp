// reconstruct ID: a rank-k image of a resident image. compress FILE: the same in one call,
// nothing kept on the server.

#include <cmath>
#include <optional>
#include <stdexcept>
#include <variant>

#include "client/cli/commands/common.hpp"
#include "client/cli/image_output.hpp"
#include "client/image_files.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

// What reconstruct and compress print about their answer.
struct Answer {
  const std::string* id = nullptr;  // Only for reconstruct.
  const v1::Shape& shape;
  std::uint32_t rank = 0;
  double relative_error = 0;
  v1::OutputFormat format = v1::OUTPUT_FORMAT_RAW_U8;
  const std::string& pixels;
  double server_total_us = 0;
  std::optional<double> energy_asked{};  // --energy F
  const std::filesystem::path* source = nullptr;  // compress: the file sent
};

// Kept energy 1 - e^2 below F by more than rounding: the server answered with every triplet it
// keeps, which falls short of F.
constexpr double kEnergyTolerance = 1e-6;

// Notes on stderr (and in --json) when the answer is not what the flags suggest it would be.
struct Notes {
  std::optional<double> energy_kept{};  // set when --energy could not be met
  bool larger_than_source = false;      // a PNG larger than the file it came from
};

Notes notes_on(const Answer& answer, const std::filesystem::path& out, std::uint64_t bytes_written) {
  Notes notes;
  const double kept = 1.0 - answer.relative_error * answer.relative_error;
  if (answer.energy_asked && kept < *answer.energy_asked - kEnergyTolerance) notes.energy_kept = kept;
  if (answer.source != nullptr && lower_case_extension(out) == "png") {
    std::error_code ignored;
    const auto source_bytes = std::filesystem::file_size(*answer.source, ignored);
    notes.larger_than_source = !ignored && bytes_written > source_bytes;
  }
  return notes;
}

void print_notes(CommandContext& context, const Answer& answer, const Notes& notes) {
  if (notes.energy_kept) {
    context.err() << "note: --energy " << *answer.energy_asked << " is more than the " << answer.rank
                  << " singular triplets kept hold (" << fixed_text(100.0 * *notes.energy_kept, 2)
                  << " %): this is rank " << answer.rank
                  << ", the highest there is; decompose with a larger --max-rank to go higher\n";
  }
  if (notes.larger_than_source) {
    context.err() << "note: the PNG is larger than " << answer.source->filename().string()
                  << ": PNG is lossless, and a rank-k image is not simpler for it than the photo;"
                     " write .jpg (--jpeg-quality N) for a small file\n";
  }
}

int write_and_print(CommandContext& context, const std::filesystem::path& out, const Answer& answer) {
  std::uint64_t bytes_written = 0;
  try {
    bytes_written = write_output_image(out, answer.format, answer.shape, answer.pixels);
  } catch (const std::runtime_error& error) {
    return report_error(context.err(), error.what());
  }
  const bool local = encodes_locally(answer.format, out);
  const Notes notes = notes_on(answer, out, bytes_written);
  print_notes(context, answer, notes);
  if (context.json()) {
    JsonWriter json;
    json.begin_object();
    if (answer.id != nullptr) json.field("id", *answer.id);
    json.field("rank", answer.rank)
        .field("relative_error", answer.relative_error)
        .field("width", answer.shape.width())
        .field("height", answer.shape.height())
        .field("channels", answer.shape.channels())
        .field("format", output_format_name(answer.format))
        .field("encoded_locally", local)
        .field("output", out.string())
        .field("bytes_written", bytes_written)
        .field("server_total_ms", answer.server_total_us / 1000.0);
    if (notes.energy_kept) json.field("energy_kept", *notes.energy_kept).field("energy_met", false);
    if (notes.larger_than_source) json.field("larger_than_source", true);
    json.end_object();
    context.out() << json.str() << '\n';
  } else {
    context.out() << "rank " << answer.rank << ", relative error " << fixed_text(answer.relative_error, 6) << ", "
                  << shape_text(answer.shape) << ", wrote " << out.string() << " ("
                  << (local ? "encoded here, " : std::string(output_format_name(answer.format)) + ", ")
                  << bytes_text(bytes_written) << "), " << ms_text(answer.server_total_us)
                  << " ms on the server\n";
  }
  return to_int(ExitCode::ok);
}

std::optional<double> energy_asked(const ParsedArgs& args) {
  const RankChoice choice = rank_choice_from(args);
  if (const auto* energy = std::get_if<EnergyFraction>(&choice)) return energy->value;
  return std::nullopt;
}

int run_reconstruct(CommandContext& context, const ParsedArgs& args) {
  v1::ReconstructRequest request;
  request.set_id(args.positionals().front());
  set_rank_choice(request, rank_choice_from(args));
  const auto out = output_from(args);
  request.set_format(choose_output_format(args.value("format"), out));
  request.set_jpeg_quality(jpeg_quality_from(args, request.format()));

  const auto result =
      context.servers().call(request.id(), [&](const Client& client) { return client.reconstruct(request); });
  if (!result) return report_error(context.err(), result.status());
  const auto& response = *result;
  return write_and_print(context, out,
                         Answer{.id = &response.id(),
                                .shape = response.shape(),
                                .rank = response.rank(),
                                .relative_error = response.relative_error(),
                                .format = request.format(),
                                .pixels = response.pixels(),
                                .server_total_us = response.timings().total_us(),
                                .energy_asked = energy_asked(args)});
}

int run_compress(CommandContext& context, const ParsedArgs& args) {
  const std::filesystem::path file = args.positionals().front();
  v1::CompressRequest request;
  set_rank_choice(request, rank_choice_from(args));
  const auto out = output_from(args);
  request.set_format(choose_output_format(args.value("format"), out));
  request.set_jpeg_quality(jpeg_quality_from(args, request.format()));
  try {
    request.mutable_image()->set_encoded(read_file_bytes(file));
  } catch (const std::runtime_error& error) {
    return report_error(context.err(), error.what());
  }

  const auto result = context.servers().call({}, [&](const Client& client) { return client.compress(request); });
  if (!result) return report_error(context.err(), result.status());
  const auto& response = *result;
  return write_and_print(context, out,
                         Answer{.shape = response.shape(),
                                .rank = response.rank(),
                                .relative_error = response.relative_error(),
                                .format = request.format(),
                                .pixels = response.pixels(),
                                .server_total_us = response.timings().total_us(),
                                .energy_asked = energy_asked(args),
                                .source = &file});
}

}  // namespace

std::vector<Command> reconstruct_commands() {
  return {
      Command{
          .name = "reconstruct",
          .synopsis = "ID (--rank K | --energy F) -o OUT [--format png|jpeg|u8|f32] [--jpeg-quality N]",
          .summary = "write the rank-k reconstruction of a resident image",
          .options = {kRankOption, kEnergyOption, kOutputOption, kFormatOption, kJpegQualityOption},
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_reconstruct,
      },
      Command{
          .name = "compress",
          .synopsis = "FILE (--rank K | --energy F) -o OUT [--format png|jpeg|u8|f32] [--jpeg-quality N]",
          .summary = "one-shot: image in, rank-k image out, nothing kept on the server",
          .options = {kRankOption, kEnergyOption, kOutputOption, kFormatOption, kJpegQualityOption},
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_compress,
      },
  };
}

}  // namespace svdserve::cli
