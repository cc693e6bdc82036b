// reconstruct ID: a rank-k image of a resident image. compress FILE: the same in one call,
// nothing kept on the server.

#include <stdexcept>

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
};

int write_and_print(CommandContext& context, const std::filesystem::path& out, const Answer& answer) {
  std::uint64_t bytes_written = 0;
  try {
    bytes_written = write_output_image(out, answer.format, answer.shape, answer.pixels);
  } catch (const std::runtime_error& error) {
    return report_error(context.err(), error.what());
  }
  const bool local = encodes_locally(answer.format, out);
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
        .field("server_total_ms", answer.server_total_us / 1000.0)
        .end_object();
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
                                .server_total_us = response.timings().total_us()});
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
                                .server_total_us = response.timings().total_us()});
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
