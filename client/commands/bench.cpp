// bench: closed-loop load. C callers, each sending its next request when the previous one is
// answered, for a duration or a count; then throughput, latency percentiles, errors by code.
// --op stream: each request is one ReconstructStream of N items (what `run` sends), so images/s
// counts N per request and the latency is the whole stream's.
// --op echo and --sweep set the op against Echo with the same message sizes: the transport's
// limit for those sizes, measured in the same run.

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/cli/bench_report.hpp"
#include "client/cli/client_pool.hpp"
#include "client/cli/closed_loop.hpp"
#include "client/cli/echo_sizing.hpp"
#include "client/cli/image_output.hpp"
#include "client/cli/sweep_report.hpp"
#include "client/commands/common.hpp"
#include "client/image_files.hpp"

namespace svdserve::cli {
namespace {

constexpr std::chrono::seconds kDefaultDuration{10};
constexpr std::uint32_t kDefaultBenchRank = 16;
constexpr std::uint32_t kDefaultStreamItems = 16;
constexpr std::chrono::seconds kConnectTimeout{10};

// How long each measured run lasts, and what comes before it.
struct RunLength {
  std::optional<std::uint64_t> count;  // Else duration.
  std::chrono::milliseconds duration{kDefaultDuration};
  std::uint64_t warmup = 0;  // Unmeasured requests before each run.
};

// What the callers of one run send.
struct Workload {
  std::string op;
  // Caller c's next call on the given client.
  std::function<grpc::Status(const Client& client, std::size_t caller)> call;
  std::size_t images_per_call = 1;  // stream: items per stream.
  std::string request_wire;  // A serialized request of this workload: its size, echo's payload.
  std::size_t response_bytes = 0;  // Serialized response size, once known (echo, or after a probe).
  // One unmeasured call; the serialized size of its response. Unset for echo.
  std::function<CallResult<std::size_t>(const Client& client)> probe;
};

// Images created for a run, deleted when it ends however it ends.
class CreatedImages {
 public:
  explicit CreatedImages(const Client& client) : client_(client) {}
  CreatedImages(const CreatedImages&) = delete;
  CreatedImages& operator=(const CreatedImages&) = delete;
  ~CreatedImages() {
    for (const auto& id : ids_) static_cast<void>(client_.delete_image(id));  // Best effort.
  }
  void add(std::string id) { ids_.push_back(std::move(id)); }

 private:
  const Client& client_;
  std::vector<std::string> ids_;
};

template <class Response>
CallResult<std::size_t> response_size(const CallResult<Response>& result) {
  if (!result) return result.status();
  return result->ByteSizeLong();
}

// One ReconstructStream of items: its own status, else the first item's failure (an item's
// error travels in its response), else OK.
grpc::Status stream_status(const Client& client, const std::vector<v1::ReconstructRequest>& items) {
  grpc::Status first_failure = grpc::Status::OK;
  grpc::Status status = client.reconstruct_stream(items, [&](std::size_t, v1::ReconstructStreamResponse& response) {
    if (response.status().code() != 0 && first_failure.ok()) {
      first_failure = grpc::Status(static_cast<grpc::StatusCode>(response.status().code()), response.status().message());
    }
  });
  return status.ok() ? first_failure : status;
}

// Runs workload with concurrency callers spread over pool; fills the measured part of report.
BenchReport measure(const Workload& workload, const ClientPool& pool, std::size_t concurrency,
                    const RunLength& length, BenchReport report) {
  std::vector<Call> calls;
  calls.reserve(concurrency);
  for (std::size_t c = 0; c < concurrency; ++c) {
    calls.emplace_back([&workload, &pool, c] { return workload.call(pool.for_caller(c), c); });
  }
  if (length.warmup > 0) {
    auto warmup_stop = StopCondition::after_count(length.warmup);
    static_cast<void>(run_closed_loop(calls, warmup_stop));
  }
  const auto start = BenchClock::now();
  auto stop = length.count ? StopCondition::after_count(*length.count) : StopCondition::at(start + length.duration);
  const auto logs = run_closed_loop(calls, stop);
  report.elapsed_s = std::chrono::duration<double>(BenchClock::now() - start).count();
  report.op = workload.op;
  report.concurrency = concurrency;
  report.connections = std::min(concurrency, pool.size());
  report.images_per_request = workload.images_per_call;
  report.request_bytes = workload.request_wire.size();
  report.response_bytes = workload.response_bytes;
  add_caller_logs(logs, report);
  return report;
}

// Echo with the sizes of workload's request and of probed_response_bytes.
Workload echo_workload_like(const Workload& workload, std::size_t probed_response_bytes) {
  auto request = std::make_shared<const v1::EchoRequest>(
      echo_request_matching(workload.request_wire, workload.request_wire.size(), probed_response_bytes));
  Workload echo;
  echo.op = "echo";
  echo.request_wire = request->SerializeAsString();
  echo.response_bytes = echo_response_wire_bytes(*request);
  echo.call = [request](const Client& client, std::size_t) { return client.echo(*request).status(); };
  return echo;
}

void print_text(std::ostream& out, const BenchReport& report, const std::string& imitated_op) {
  out << "bench " << report.op;
  if (report.op == "echo") out << " sized like " << imitated_op;
  if (imitated_op != "decompose") out << ": rank " << report.rank << ", " << report.format;
  out << ", concurrency " << report.concurrency << ", " << fixed_text(report.elapsed_s, 2) << " s\n"
      << "requests   " << report.requests << " (" << report.succeeded << " ok, " << report.failed() << " failed)";
  if (report.images_per_request > 1) out << ", each a stream of " << report.images_per_request << " images";
  out << '\n'
      << "images/s   " << fixed_text(report.images_per_second(), 1) << '\n';
  if (report.response_bytes > 0) {
    out << "bytes      request " << report.request_bytes << ", response " << report.response_bytes << '\n';
  }
  const auto& latency = report.latency;
  if (latency.count > 0) {
    out << "latency ms p50 " << fixed_text(latency.p50_ms, 2) << "  p90 " << fixed_text(latency.p90_ms, 2)
        << "  p99 " << fixed_text(latency.p99_ms, 2) << "  max " << fixed_text(latency.max_ms, 2) << "  (mean "
        << fixed_text(latency.mean_ms, 2) << ")\n";
  }
  if (!report.errors.empty()) {
    out << "errors    ";
    for (const auto& [code, count] : report.errors) out << ' ' << code << ' ' << count;
    out << '\n';
  }
}

// Writes text to --json FILE, or to stdout for "-"; returns false (after reporting) on failure.
bool write_json(CommandContext& context, const std::optional<std::string>& json_file, const std::string& text) {
  if (!json_file) return true;
  if (*json_file == "-") {
    context.out() << text;
    return true;
  }
  try {
    write_file_bytes(*json_file, text);
    return true;
  } catch (const std::runtime_error& error) {
    static_cast<void>(report_error(context.err(), error.what()));
    return false;
  }
}

int exit_code_of(std::uint64_t requests, std::uint64_t succeeded, std::uint64_t unreachable) {
  const std::uint64_t failed = requests - succeeded;
  if (failed == 0) return to_int(ExitCode::ok);
  return to_int(succeeded == 0 && unreachable == failed ? ExitCode::unreachable : ExitCode::failed);
}

std::vector<std::size_t> sweep_from(const ParsedArgs& args) {
  std::vector<std::size_t> levels;
  if (const auto text = args.value("sweep")) {
    for (const auto level : parse_rank_list(*text, "--sweep")) levels.push_back(level);
  }
  return levels;
}

int run_bench(CommandContext& context, const ParsedArgs& args) {
  const std::string op = args.value_or("op", "reconstruct");
  if (op != "reconstruct" && op != "stream" && op != "compress" && op != "decompose" && op != "echo") {
    throw UsageError("--op expects reconstruct, stream, compress, decompose or echo");
  }
  // echo imitates a reconstruct of the same image, rank and format; stream sends reconstructs.
  const std::string real_op = op == "echo" || op == "stream" ? "reconstruct" : op;
  std::uint32_t stream_items = kDefaultStreamItems;
  if (const auto text = args.value("stream-items")) {
    if (op != "stream") throw UsageError("--stream-items applies to --op stream");
    stream_items = parse_uint32(*text, "--stream-items");
    if (stream_items == 0) throw UsageError("--stream-items must be at least 1");
  }
  const auto sweep = sweep_from(args);
  if (!sweep.empty() && op == "echo") throw UsageError("--sweep runs echo beside --op; give reconstruct, compress or decompose");
  if (!sweep.empty() && args.has("concurrency")) throw UsageError("give --sweep or --concurrency, not both");
  const auto image = args.value("image");
  auto id = args.value("id");
  if (real_op == "reconstruct" && !image && !id) throw UsageError("bench " + op + " needs --image FILE or --id ID");
  if (real_op != "reconstruct" && !image) throw UsageError("bench " + op + " needs --image FILE");
  if (real_op != "reconstruct" && id) throw UsageError("--id applies to --op reconstruct, stream and echo");
  std::uint32_t rank = kDefaultBenchRank;
  if (const auto text = args.value("rank")) rank = parse_uint32(*text, "--rank");
  if (rank == 0) throw UsageError("--rank must be at least 1");
  const auto format = parse_output_format(args.value_or("format", "u8"));
  const std::size_t concurrency = concurrency_from(args);
  const std::size_t max_concurrency = sweep.empty() ? concurrency : *std::ranges::max_element(sweep);
  // One connection per caller by default: measured on a 2-core loopback with 3 MiB echoes, 16 callers
  // on 16 connections did about 1.5x the images/s of 16 on one, so one connection would make
  // the client the limit rather than the server.
  std::size_t connections = max_concurrency;
  if (const auto text = args.value("connections")) {
    connections = parse_uint32(*text, "--connections");
    if (connections == 0) throw UsageError("--connections must be at least 1");
  }
  const auto duration_text = args.value("duration");
  const auto count_text = args.value("count");
  if (duration_text && count_text) throw UsageError("give --duration or --count, not both");
  RunLength length;
  if (count_text) length.count = parse_uint64(*count_text, "--count");
  if (duration_text) length.duration = parse_seconds(*duration_text, "--duration");
  if (const auto text = args.value("warmup")) length.warmup = parse_uint64(*text, "--warmup");
  const std::uint32_t max_rank = max_rank_from(args);
  const auto json_file = args.value("json");

  std::string encoded;
  if (image) {
    try {
      encoded = read_file_bytes(*image);
    } catch (const std::runtime_error& error) {
      return report_error(context.err(), error.what());
    }
  }
  const Client& client = context.client();
  const std::string stem = image ? std::filesystem::path(*image).stem().string() : std::string();
  const ClientPool pool(client.target(), client.options(), connections);
  CreatedImages created(client);

  Workload workload;
  workload.op = real_op;
  if (real_op == "reconstruct") {
    if (!id) {
      id = "bench-" + stem;
      const auto decomposed = client.decompose(encoded, max_rank, *id);
      if (!decomposed) return report_error(context.err(), decomposed.status());
      created.add(*id);
    }
    auto request = std::make_shared<v1::ReconstructRequest>();
    request->set_id(*id);
    request->set_rank(rank);
    request->set_format(format);
    workload.request_wire = request->SerializeAsString();
    // The probe (one item's answer) sizes echo for stream too.
    workload.probe = [request](const Client& on) { return response_size(on.reconstruct(*request)); };
    if (op == "stream") {
      workload.op = "stream";
      workload.images_per_call = stream_items;
      workload.call = [items = std::make_shared<const std::vector<v1::ReconstructRequest>>(stream_items, *request)](
                          const Client& on, std::size_t) { return stream_status(on, *items); };
    } else {
      workload.call = [request](const Client& on, std::size_t) { return on.reconstruct(*request).status(); };
    }
  } else if (real_op == "compress") {
    auto request = std::make_shared<v1::CompressRequest>();
    request->mutable_image()->set_encoded(encoded);
    request->set_rank(rank);
    request->set_format(format);
    workload.request_wire = request->SerializeAsString();
    workload.call = [request](const Client& on, std::size_t) { return on.compress(*request).status(); };
    workload.probe = [request](const Client& on) { return response_size(on.compress(*request)); };
  } else {
    // One id per caller, so the store holds C images however long the run.
    auto requests = std::make_shared<std::vector<v1::DecomposeRequest>>(max_concurrency);
    for (std::size_t c = 0; c < max_concurrency; ++c) {
      auto& request = (*requests)[c];
      request.mutable_image()->set_encoded(encoded);
      request.set_max_rank(max_rank);
      request.set_id("bench-" + stem + "-" + std::to_string(c));
      created.add(request.id());
    }
    workload.request_wire = requests->front().SerializeAsString();
    workload.call = [requests](const Client& on, std::size_t caller) {
      return on.decompose((*requests)[caller]).status();
    };
    workload.probe = [requests](const Client& on) { return response_size(on.decompose(requests->front())); };
  }

  if (!pool.connect_all(kConnectTimeout)) {
    return report_error(context.err(), grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                                     "could not connect to " + client.target()));
  }
  // Echo needs the real response's size: one call of the real op, not measured.
  std::optional<Workload> echo;
  if (op == "echo" || !sweep.empty()) {
    const auto probed = workload.probe(pool.for_caller(0));
    if (!probed) return report_error(context.err(), probed.status());
    workload.response_bytes = *probed;
    echo = echo_workload_like(workload, workload.response_bytes);
  }

  BenchReport base{.op = op,
                   .server = context.globals().server,
                   .image = image.value_or(""),
                   .id = real_op == "reconstruct" ? *id : std::string(),
                   .rank = real_op == "decompose" ? 0 : rank,
                   .format = real_op == "decompose" ? "" : std::string(output_format_name(format))};
  const auto announce = [&](const std::string& what, std::size_t callers) {
    if (context.json()) return;
    context.err() << "bench " << what << " on " << context.globals().server << ": " << callers << (callers == 1 ? " caller, " : " callers, ")
                  << (count_text ? *count_text + " requests" : fixed_text(length.duration.count() / 1000.0, 1) + " s")
                  << "...\n";
  };

  if (sweep.empty()) {
    const Workload& measured = op == "echo" ? *echo : workload;
    announce(op, concurrency);
    const BenchReport report = measure(measured, pool, concurrency, length, base);
    if (!write_json(context, json_file, bench_report_json(report))) return to_int(ExitCode::failed);
    const bool json_on_stdout = json_file && *json_file == "-";
    if (context.json()) {
      if (!json_on_stdout) context.out() << bench_report_json(report);
    } else if (!json_on_stdout) {
      print_text(context.out(), report, real_op);
    }
    return exit_code_of(report.requests, report.succeeded, report.unreachable);
  }

  SweepReport sweep_report{.max_connections = pool.size(),
                           .duration_s = length.count ? 0.0 : length.duration.count() / 1000.0,
                           .count = length.count.value_or(0)};
  std::uint64_t requests = 0, succeeded = 0, unreachable = 0;
  for (const std::size_t level : sweep) {
    announce(op + " and echo", level);
    SweepRow row{measure(workload, pool, level, length, base), measure(*echo, pool, level, length, base)};
    for (const BenchReport* run : {&row.op, &row.echo}) {
      requests += run->requests;
      succeeded += run->succeeded;
      unreachable += run->unreachable;
    }
    sweep_report.rows.push_back(std::move(row));
  }
  if (!write_json(context, json_file, sweep_report_json(sweep_report))) return to_int(ExitCode::failed);
  const bool json_on_stdout = json_file && *json_file == "-";
  if (context.json()) {
    if (!json_on_stdout) context.out() << sweep_report_json(sweep_report);
  } else if (!json_on_stdout) {
    print_sweep_table(context.out(), sweep_report);
  }
  return exit_code_of(requests, succeeded, unreachable);
}

}  // namespace

std::vector<Command> bench_commands() {
  return {Command{
      .name = "bench",
      .synopsis = "[--op reconstruct|stream|compress|decompose|echo] (--image FILE | --id ID) [--rank K]\n"
                  "       [--stream-items N]\n"
                  "       [--concurrency C | --sweep C1,C2,...] [--connections N] [--duration SECONDS | --count N]\n"
                  "       [--warmup N] [--format png|u8|f32] [--json FILE]",
      .summary = "closed-loop load: C callers back to back; images/s, latency percentiles, errors",
      .options = {{"op", "OP",
                   "reconstruct (default), stream (reconstructs through ReconstructStream, as `run` sends them), "
                   "compress, decompose, or echo: the transport alone, with the sizes of the reconstruct these "
                   "options describe"},
                  {"stream-items", "N", "stream: reconstructs per stream, i.e. per request (default 16)"},
                  {"image", "FILE", "the image to send (reconstruct: decomposed first as bench-<stem>)"},
                  {"id", "ID", "reconstruct an image already on the server instead"},
                  {"rank", "K", "rank of each reconstruction (default 16)"},
                  {"max-rank", "R", "--max-rank of the decompositions (default: the server's)"},
                  kConcurrencyOption,
                  {"sweep", "C1,C2,...",
                   "at each concurrency run the op, then echo of the same sizes; one table with the ratio"},
                  {"connections", "N", "gRPC connections the callers share round-robin (default: one per caller)"},
                  {"duration", "SECONDS", "how long each run lasts (default 10)"},
                  {"count", "N", "how many requests each run sends, instead of --duration"},
                  {"warmup", "N", "requests sent before each run and not measured (default 0)"},
                  {"format", "FMT", "png, u8 (default) or f32"},
                  {"json", "FILE", "also write the report as JSON to FILE ('-': stdout only)"}},
      .max_positionals = 0,
      .run = run_bench,
  }};
}

}  // namespace svdserve::cli
