// spectrum ID -o FILE: a picture of a resident image's singular values and cumulative energy,
// and the ranks keeping 90%, 99% and 99.9% of the energy.

#include <stdexcept>

#include "client/cli/commands/common.hpp"
#include "client/cli/energy_ranks.hpp"
#include "client/cli/image_output.hpp"
#include "client/cli/spectrum_plot.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

int run_spectrum(CommandContext& context, const ParsedArgs& args) {
  const auto& id = args.positionals().front();
  const auto out = output_from(args);
  require_picture_name(out, "-o");

  const auto result =
      context.servers().call(id, [&](const Client& client) { return client.get_image(id, /*include_singular_values=*/true); });
  if (!result) return report_error(context.err(), result.status());
  ChannelSpectra spectra;
  for (const auto& channel : result->singular_values()) spectra.emplace_back(channel.values().begin(), channel.values().end());
  const std::vector<double> cumulative = cumulative_energy(spectra);
  if (cumulative.empty()) return report_error(context.err(), "the server sent no singular values for " + id);

  const auto& info = result->info();
  const std::string title = info.id() + ": " + shape_text(info.shape()) + ", " +
                            std::to_string(cumulative.size()) + " singular values per channel";
  try {
    static_cast<void>(write_image_file(out, draw_spectrum_plot(spectra, title)));
  } catch (const std::runtime_error& error) {
    return report_error(context.err(), error.what());
  }

  if (context.json()) {
    JsonWriter json;
    json.begin_object()
        .field("id", info.id())
        .field("channels", std::uint64_t{spectra.size()})
        .field("rank_kept", info.rank_kept())
        .field("output", out.string());
    json.key("energy_ranks").begin_array();
    for (const double fraction : kMarkedEnergyFractions) {
      json.begin_object().field("energy", fraction).field("rank", rank_for_energy(cumulative, fraction)).end_object();
    }
    json.end_array().end_object();
    context.out() << json.str() << '\n';
    return to_int(ExitCode::ok);
  }
  context.out() << "id " << info.id() << ": " << shape_text(info.shape()) << ", rank kept " << info.rank_kept()
                << ", wrote " << out.string() << '\n';
  for (const double fraction : kMarkedEnergyFractions) {
    context.out() << "energy " << energy_percent_text(fraction) << ": rank " << rank_for_energy(cumulative, fraction) << '\n';
  }
  return to_int(ExitCode::ok);
}

}  // namespace

std::vector<Command> spectrum_commands() {
  return {Command{
      .name = "spectrum",
      .synopsis = "ID -o FILE",
      .summary = "plot a resident image's singular values and energy; print the ranks keeping 90/99/99.9%",
      .options = {{"output", "FILE", "the picture (.png, .jpg, ...: format from the extension)", 'o'}},
      .min_positionals = 1,
      .max_positionals = 1,
      .run = run_spectrum,
  }};
}

}  // namespace svdserve::cli
