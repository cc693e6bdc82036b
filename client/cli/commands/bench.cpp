// bench: closed-loop load from svdserve::loadgen. C callers, each sending its next request when
// the previous one is answered, for a duration or a count; then throughput, latency percentiles,
// errors by code. --op stream: each request is one ReconstructStream of N items (what `run`
// sends), so images/s counts N per request and the latency is the whole stream's.
// --op echo and --sweep set the op against Echo with the same message sizes: the transport's
// limit for those sizes, measured in the same run.

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/cli/commands/common.hpp"
#include "client/cli/image_output.hpp"
#include "client/image_files.hpp"
#include "client/loadgen/bench_report.hpp"
#include "client/loadgen/client_pool.hpp"
#include "client/loadgen/sweep_report.hpp"
#include "client/loadgen/workload.hpp"

namespace svdserve::cli {
namespace {

using loadgen::BenchReport;

constexpr std::chrono::seconds kDefaultDuration{10};
constexpr std::uint32_t kDefaultBenchRank = 16;
constexpr std::uint32_t kDefaultStreamItems = 16;
constexpr std::chrono::seconds kConnectTimeout{10};

// The report as JSON to --json FILE (or to stdout for "-", or for the global --json), else as
// text; returns false (after reporting) when FILE cannot be written.
bool write_report(CommandContext& context, const std::optional<std::string>& json_file, const std::string& json,
                  const std::function<void(std::ostream&)>& print_text) {
  const bool json_on_stdout = json_file && *json_file == "-";
  if (json_file && !json_on_stdout) {
    try {
      write_file_bytes(*json_file, json);
    } catch (const std::runtime_error& error) {
      static_cast<void>(report_error(context.err(), error.what()));
      return false;
    }
  }
  if (json_on_stdout || context.json()) {
    context.out() << json;
  } else {
    print_text(context.out());
  }
  return true;
}

// The bench command line, checked before anything touches the network.
struct BenchOptions {
  std::string op;       // reconstruct, stream, compress, decompose, echo
  std::string real_op;  // What is sent or imitated: echo and stream imitate reconstruct.
  std::uint32_t stream_items = kDefaultStreamItems;
  std::vector<std::size_t> sweep{};  // Concurrency levels; empty: one run at concurrency.
  std::optional<std::string> image{};
  std::optional<std::string> id{};
  std::uint32_t ids = 1;  // Images reconstructed, one per caller in turn.
  std::uint32_t rank = kDefaultBenchRank;
  v1::OutputFormat format = v1::OUTPUT_FORMAT_RAW_U8;
  std::uint32_t jpeg_quality = 0;  // 0: the server's default
  std::size_t concurrency = kDefaultConcurrency;
  std::size_t max_concurrency = kDefaultConcurrency;  // Of all runs.
  std::size_t connections = 0;
  std::optional<std::string> count_text{};  // As given, for the announcement.
  loadgen::RunLength length{.duration = kDefaultDuration};
  std::uint32_t max_rank = 0;
  std::optional<std::string> json_file{};
};

BenchOptions bench_options_from(const ParsedArgs& args) {
  BenchOptions options;
  options.op = args.value_or("op", "reconstruct");
  const std::string& op = options.op;
  if (op != "reconstruct" && op != "stream" && op != "compress" && op != "decompose" && op != "echo") {
    throw UsageError("--op expects reconstruct, stream, compress, decompose or echo");
  }
  options.real_op = op == "echo" || op == "stream" ? "reconstruct" : op;
  if (const auto text = args.value("stream-items")) {
    if (op != "stream") throw UsageError("--stream-items applies to --op stream");
    options.stream_items = parse_uint32(*text, "--stream-items");
    if (options.stream_items == 0) throw UsageError("--stream-items must be at least 1");
  }
  if (const auto text = args.value("sweep")) {
    for (const auto level : parse_rank_list(*text, "--sweep")) options.sweep.push_back(level);
  }
  const bool sweeping = !options.sweep.empty();
  if (sweeping && op == "echo") throw UsageError("--sweep runs echo beside --op; give reconstruct, compress or decompose");
  if (sweeping && args.has("concurrency")) throw UsageError("give --sweep or --concurrency, not both");
  options.image = args.value("image");
  options.id = args.value("id");
  const bool reconstructs = options.real_op == "reconstruct";
  if (reconstructs && !options.image && !options.id) throw UsageError("bench " + op + " needs --image FILE or --id ID");
  if (!reconstructs && !options.image) throw UsageError("bench " + op + " needs --image FILE");
  if (!reconstructs && options.id) throw UsageError("--id applies to --op reconstruct, stream and echo");
  if (const auto text = args.value("ids")) {
    if (op != "reconstruct") throw UsageError("--ids applies to --op reconstruct");
    if (options.id || !options.image) throw UsageError("--ids needs --image FILE, not --id");
    options.ids = parse_uint32(*text, "--ids");
    if (options.ids == 0) throw UsageError("--ids must be at least 1");
  }
  if (const auto text = args.value("rank")) options.rank = parse_uint32(*text, "--rank");
  if (options.rank == 0) throw UsageError("--rank must be at least 1");
  options.format = parse_output_format(args.value_or("format", "u8"));
  options.jpeg_quality = jpeg_quality_from(args, options.format);
  options.concurrency = concurrency_from(args);
  options.max_concurrency = sweeping ? *std::ranges::max_element(options.sweep) : options.concurrency;
  // One connection per caller by default: on a 2-core loopback with 3 MiB echoes, 16 callers on
  // 16 connections did about 1.5x the images/s of 16 on one (one connection is the client's limit).
  options.connections = options.max_concurrency;
  if (const auto text = args.value("connections")) {
    options.connections = parse_uint32(*text, "--connections");
    if (options.connections == 0) throw UsageError("--connections must be at least 1");
  }
  const auto duration_text = args.value("duration");
  options.count_text = args.value("count");
  if (duration_text && options.count_text) throw UsageError("give --duration or --count, not both");
  if (options.count_text) options.length.count = parse_uint64(*options.count_text, "--count");
  if (duration_text) options.length.duration = parse_seconds(*duration_text, "--duration");
  if (const auto text = args.value("warmup")) options.length.warmup = parse_uint64(*text, "--warmup");
  options.max_rank = max_rank_from(args);
  options.json_file = args.value("json");
  return options;
}

// The workload of options.real_op for the image in encoded. Images it decomposes first (the
// reconstruct target, or decompose's one id per caller) are added to created. Fills in
// options.id when reconstruct made its own image.
CallResult<loadgen::Workload> workload_from(BenchOptions& options, const std::string& encoded, const Client& client,
                                            loadgen::CreatedImages& created) {
  const std::string stem = options.image ? std::filesystem::path(*options.image).stem().string() : std::string();
  if (options.real_op == "reconstruct" && options.ids > 1) {
    // The image under ids ids, caller c asking for id c % ids: a load balancer that routes by id
    // spreads them over its replicas.
    std::vector<v1::ReconstructRequest> requests(options.ids);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].set_id("bench-" + stem + "-" + std::to_string(i));
      const auto decomposed = client.decompose(encoded, options.max_rank, requests[i].id());
      if (!decomposed) return decomposed.status();
      created.add(requests[i].id());
      requests[i].set_rank(options.rank);
      requests[i].set_format(options.format);
      requests[i].set_jpeg_quality(options.jpeg_quality);
    }
    options.id = requests.front().id();
    return loadgen::reconstruct_workload(std::move(requests));
  }
  if (options.real_op == "reconstruct") {
    if (!options.id) {
      options.id = "bench-" + stem;
      const auto decomposed = client.decompose(encoded, options.max_rank, *options.id);
      if (!decomposed) return decomposed.status();
      created.add(*options.id);
    }
    v1::ReconstructRequest request;
    request.set_id(*options.id);
    request.set_rank(options.rank);
    request.set_format(options.format);
    request.set_jpeg_quality(options.jpeg_quality);
    return options.op == "stream" ? loadgen::stream_workload(request, options.stream_items)
                                  : loadgen::reconstruct_workload(request);
  }
  if (options.real_op == "compress") {
    v1::CompressRequest request;
    request.mutable_image()->set_encoded(encoded);
    request.set_rank(options.rank);
    request.set_format(options.format);
    request.set_jpeg_quality(options.jpeg_quality);
    return loadgen::compress_workload(request);
  }
  std::vector<v1::DecomposeRequest> requests(options.max_concurrency);
  for (std::size_t c = 0; c < requests.size(); ++c) {
    requests[c].mutable_image()->set_encoded(encoded);
    requests[c].set_max_rank(options.max_rank);
    requests[c].set_id("bench-" + stem + "-" + std::to_string(c));
    created.add(requests[c].id());
  }
  return loadgen::decompose_workload(std::move(requests));
}

int run_bench(CommandContext& context, const ParsedArgs& args) {
  // A measurement of one server (or of one load balancer and what is behind it).
  if (context.globals().servers.size() != 1) throw UsageError("bench measures one --server address");
  BenchOptions options = bench_options_from(args);
  const std::string& op = options.op;
  std::string encoded;
  if (options.image) {
    try {
      encoded = read_file_bytes(*options.image);
    } catch (const std::runtime_error& error) {
      return report_error(context.err(), error.what());
    }
  }
  const Client& client = context.servers().client(0);
  const loadgen::ClientPool pool(client.target(), client.options(), options.connections);
  loadgen::CreatedImages created(client);
  auto workload = workload_from(options, encoded, client, created);
  if (!workload) return report_error(context.err(), workload.status());

  if (!pool.connect_all(kConnectTimeout)) {
    return report_error(context.err(), grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                                     "could not connect to " + client.target()));
  }
  // Echo needs the real response's size: one call of the real op, not measured.
  std::optional<loadgen::Workload> echo;
  if (op == "echo" || !options.sweep.empty()) {
    const auto probed = workload->probe(pool.for_caller(0));
    if (!probed) return report_error(context.err(), probed.status());
    workload->response_bytes = *probed;
    echo = loadgen::echo_workload_like(*workload, workload->response_bytes);
  } else if (options.real_op != "decompose") {
    // The report gives the real response's size: one call, not measured. A call that fails here
    // fails in the run too, which counts it by its code.
    if (const auto probed = workload->probe(pool.for_caller(0))) workload->response_bytes = *probed;
  }

  const bool decomposes = options.real_op == "decompose";
  const BenchReport base{.op = op,
                         .server = context.globals().servers.front(),
                         .image = options.image.value_or(""),
                         .id = options.real_op == "reconstruct" ? *options.id : std::string(),
                         .rank = decomposes ? 0 : options.rank,
                         .format = decomposes ? "" : std::string(output_format_name(options.format))};
  const auto& length = options.length;
  const auto announce = [&](const std::string& what, std::size_t callers) {
    if (context.json()) return;
    context.err() << "bench " << what << " on " << context.globals().servers.front() << ": " << callers
                  << (callers == 1 ? " caller, " : " callers, ")
                  << (options.count_text ? *options.count_text + " requests"
                                         : fixed_text(length.duration.count() / 1000.0, 1) + " s")
                  << "...\n";
  };

  if (options.sweep.empty()) {
    announce(op, options.concurrency);
    const BenchReport report = loadgen::measure(op == "echo" ? *echo : *workload, pool, options.concurrency, length, base);
    const bool written = write_report(context, options.json_file, loadgen::bench_report_json(report),
                                      [&](std::ostream& out) { loadgen::print_bench_text(out, report, options.real_op); });
    if (!written) return to_int(ExitCode::failed);
    return exit_code_for_items(report.succeeded, report.failed(), report.unreachable);
  }

  loadgen::SweepReport sweep_report{.max_connections = pool.size(),
                                    .duration_s = length.count ? 0.0 : length.duration.count() / 1000.0,
                                    .count = length.count.value_or(0)};
  std::uint64_t succeeded = 0, failed = 0, unreachable = 0;
  for (const std::size_t level : options.sweep) {
    announce(op + " and echo", level);
    loadgen::SweepRow row{loadgen::measure(*workload, pool, level, length, base),
                          loadgen::measure(*echo, pool, level, length, base)};
    for (const BenchReport* run : {&row.op, &row.echo}) {
      succeeded += run->succeeded;
      failed += run->failed();
      unreachable += run->unreachable;
    }
    sweep_report.rows.push_back(std::move(row));
  }
  const bool written = write_report(context, options.json_file, loadgen::sweep_report_json(sweep_report),
                                    [&](std::ostream& out) { loadgen::print_sweep_table(out, sweep_report); });
  if (!written) return to_int(ExitCode::failed);
  return exit_code_for_items(succeeded, failed, unreachable);
}

}  // namespace

std::vector<Command> bench_commands() {
  return {Command{
      .name = "bench",
      .synopsis = "[--op reconstruct|stream|compress|decompose|echo] (--image FILE | --id ID) [--rank K]\n"
                  "       [--stream-items N]\n"
                  "       [--concurrency C | --sweep C1,C2,...] [--connections N] [--duration SECONDS | --count N]\n"
                  "       [--warmup N] [--format png|jpeg|u8|f32] [--jpeg-quality N] [--json FILE]",
      .summary = "closed-loop load: C callers back to back; images/s, latency percentiles, errors",
      .options = {{"op", "OP",
                   "reconstruct (default), stream (reconstructs through ReconstructStream, as `run` sends them), "
                   "compress, decompose, or echo: the transport alone, with the sizes of the reconstruct these "
                   "options describe"},
                  {"stream-items", "N", "stream: reconstructs per stream, i.e. per request (default 16)"},
                  {"image", "FILE", "the image to send (reconstruct: decomposed first as bench-<stem>)"},
                  {"id", "ID", "reconstruct an image already on the server instead"},
                  {"ids", "N", "decompose the image under N ids and reconstruct them in turn, one per caller "
                               "(spreads over replicas behind a load balancer)"},
                  {"rank", "K", "rank of each reconstruction (default 16)"},
                  {"max-rank", "R", "--max-rank of the decompositions (default: the server's)"},
                  kConcurrencyOption,
                  {"sweep", "C1,C2,...",
                   "at each concurrency run the op, then echo of the same sizes; one table with the ratio"},
                  {"connections", "N", "gRPC connections the callers share round-robin (default: one per caller)"},
                  {"duration", "SECONDS", "how long each run lasts (default 10)"},
                  {"count", "N", "how many requests each run sends, instead of --duration"},
                  {"warmup", "N", "requests sent before each run and not measured (default 0)"},
                  {"format", "FMT", "png, jpeg, u8 (default) or f32"},
                  kJpegQualityOption,
                  {"json", "FILE", "also write the report as JSON to FILE ('-': stdout only)"}},
      .max_positionals = 0,
      .run = run_bench,
  }};
}

}  // namespace svdserve::cli
