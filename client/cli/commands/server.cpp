// The server itself: stats, server-info, health, profile.

#include <string>

#include "client/cli/commands/common.hpp"
#include "client/json_writer.hpp"

namespace svdserve::cli {
namespace {

int run_stats(CommandContext& context, const ParsedArgs&) {
  const auto result = context.servers().call({}, [](const Client& client) { return client.stats(); });
  if (const auto done = error_or_json(context, result)) return *done;
  const auto& stats = *result;
  auto& out = context.out();
  out << "uptime            " << fixed_text(stats.uptime_s(), 1) << " s\n"
      << "images/s          " << fixed_text(stats.images_per_second(), 2) << " (last minute)\n"
      << "resident          " << stats.images_resident() << " images, " << bytes_text(stats.bytes_resident())
      << '\n'
      << "evictions         " << stats.evictions() << '\n'
      << "batches           " << stats.batches() << ", mean size " << fixed_text(stats.mean_batch_size(), 2) << '\n'
      << "queue depth       decode " << stats.decode_queue_depth() << ", compute " << stats.compute_queue_depth()
      << '\n';
  if (stats.latencies_size() > 0) {
    out << "latency (ms)      p50 / p90 / p99 / max  (samples)\n";
    for (const auto& latency : stats.latencies()) {
      std::string stage = "  " + latency.stage();
      stage.resize(std::max<std::size_t>(stage.size() + 1, 18), ' ');
      out << stage << ms_text(latency.p50_us()) << " / " << ms_text(latency.p90_us()) << " / "
          << ms_text(latency.p99_us()) << " / " << ms_text(latency.max_us()) << "  (" << latency.samples()
          << ")\n";
    }
  }
  const auto print_counts = [&out](const char* title, const auto& methods) {
    if (methods.empty()) return;
    out << title << '\n';
    for (const auto& method : methods) {
      out << "  " << method.method() << ": " << method.requests();
      std::string separator = " (";
      for (const auto& code : method.codes()) {
        out << separator << code.code() << " " << code.count();
        separator = ", ";
      }
      out << (method.codes_size() > 0 ? ")\n" : "\n");
    }
  };
  print_counts("requests", stats.methods());
  print_counts("items (of streams and batches)", stats.items());
  return to_int(ExitCode::ok);
}

int run_server_info(CommandContext& context, const ParsedArgs&) {
  const auto result = context.servers().call({}, [](const Client& client) { return client.server_info(); });
  if (const auto done = error_or_json(context, result)) return *done;
  const auto& info = *result;
  const auto& limits = info.limits();
  context.out() << "version           " << info.version() << '\n'
                << "backend           " << info.backend() << '\n'
                << "device            " << info.device() << '\n'
                << "listening on      " << info.listen_address() << '\n'
                << "memory            " << bytes_text(info.memory_used_bytes()) << " of "
                << bytes_text(info.memory_budget_bytes()) << '\n'
                << "max image         " << limits.max_image_width() << "x" << limits.max_image_height() << ", "
                << bytes_text(limits.max_image_bytes()) << '\n'
                << "ranks             max " << limits.max_rank() << ", default " << limits.default_max_rank()
                << '\n'
                << "max message       " << bytes_text(limits.max_message_bytes()) << '\n'
                << "batching          up to " << limits.max_batch_size() << " images, "
                << limits.max_queue_delay_us() << " us delay, queue " << limits.queue_capacity() << '\n'
                << "batch call items  " << limits.max_batch_items() << '\n'
                << "compute per call  "
                << (limits.max_compute_ms() == 0 ? std::string("no limit")
                                                 : std::to_string(limits.max_compute_ms()) +
                                                       " ms, estimated")
                << '\n';
  return to_int(ExitCode::ok);
}

// Exit 0 only when SERVING: this is what a container HEALTHCHECK runs.
int run_health(CommandContext& context, const ParsedArgs& args) {
  const std::string service = args.value_or("service", "");
  const auto result = context.servers().call({}, [&](const Client& client) { return client.health(service); });
  if (!result) return report_error(context.err(), result.status());
  const auto status = *result;
  if (context.json()) {
    JsonWriter json;
    json.begin_object().field("service", service).field("status", health_status_name(status)).end_object();
    context.out() << json.str() << '\n';
  } else {
    context.out() << health_status_name(status) << '\n';
  }
  return to_int(status == HealthStatus::serving ? ExitCode::ok : ExitCode::failed);
}

int run_profile(CommandContext& context, const ParsedArgs& args) {
  const auto& action = args.positionals().front();
  if (action != "start" && action != "stop") throw UsageError("profile expects start or stop");
  const bool start = action == "start";
  const auto status = context.servers().call({}, [&](const Client& client) {
    return start ? client.start_profiling() : client.stop_profiling();
  });
  if (!status.ok()) return report_error(context.err(), status);
  if (context.json()) {
    context.out() << "{\"profiling\": " << (start ? "true" : "false") << "}\n";
  } else {
    context.out() << (start ? "profiling started\n" : "profiling stopped\n");
  }
  return to_int(ExitCode::ok);
}

}  // namespace

std::vector<Command> server_commands() {
  return {
      Command{
          .name = "stats",
          .synopsis = "",
          .summary = "request counts, latency percentiles, throughput and memory of the server",
          .run = run_stats,
      },
      Command{
          .name = "server-info",
          .synopsis = "",
          .summary = "version, backend, device, memory budget and limits of the server",
          .run = run_server_info,
      },
      Command{
          .name = "health",
          .synopsis = "[--service NAME]",
          .summary = "grpc.health.v1 check: prints SERVING or NOT_SERVING; exit 0 only when SERVING",
          .options = {{"service", "NAME", "service to check (default \"\": the whole server)"}},
          .run = run_health,
      },
      Command{
          .name = "profile",
          .synopsis = "start|stop",
          .summary = "open or close an Nsight Systems capture window on the server",
          .min_positionals = 1,
          .max_positionals = 1,
          .run = run_profile,
      },
  };
}

}  // namespace svdserve::cli
