// bench: closed-loop load. C callers, each sending its next request when the previous one is
// answered, for a duration or a count; then throughput, latency percentiles, errors by code.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "client/cli/bench_report.hpp"
#include "client/cli/image_output.hpp"
#include "client/commands/common.hpp"
#include "client/image_files.hpp"

namespace svdserve::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kDefaultDuration{10};
constexpr std::uint32_t kDefaultBenchRank = 16;

// One caller's next request; returns the call's status.
using Call = std::function<grpc::Status()>;

// Stops after a number of calls or at a time, whichever the command line chose.
class StopCondition {
 public:
  static StopCondition after_count(std::uint64_t count) { return StopCondition(count, {}); }
  static StopCondition at(Clock::time_point end) { return StopCondition(std::nullopt, end); }

  // True when one more call may start; counts it.
  bool next() {
    if (count_) return issued_.fetch_add(1, std::memory_order_relaxed) < *count_;
    return Clock::now() < end_;
  }

 private:
  StopCondition(std::optional<std::uint64_t> count, Clock::time_point end) : count_(count), end_(end) {}

  std::optional<std::uint64_t> count_;
  Clock::time_point end_;
  std::atomic<std::uint64_t> issued_{0};
};

struct CallerLog {
  std::vector<double> latencies_ms;  // Of the successful calls.
  std::map<grpc::StatusCode, std::uint64_t> errors;
  std::uint64_t requests = 0;
};

// Runs one caller per entry of calls until stop says no; returns each caller's log.
std::vector<CallerLog> run_closed_loop(const std::vector<Call>& calls, StopCondition& stop) {
  std::vector<CallerLog> logs(calls.size());
  {
    std::vector<std::jthread> callers;
    callers.reserve(calls.size());
    for (std::size_t c = 0; c < calls.size(); ++c) {
      callers.emplace_back([&, c] {
        CallerLog& log = logs[c];
        while (stop.next()) {
          const auto start = Clock::now();
          const grpc::Status status = calls[c]();
          const double latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
          ++log.requests;
          if (status.ok()) {
            log.latencies_ms.push_back(latency_ms);
          } else {
            ++log.errors[status.error_code()];
          }
        }
      });
    }
  }
  return logs;
}

void print_text(std::ostream& out, const BenchReport& report) {
  out << "bench " << report.op;
  if (report.op != "decompose") out << ": rank " << report.rank << ", " << report.format;
  out << ", concurrency " << report.concurrency << ", " << fixed_text(report.elapsed_s, 2) << " s\n"
      << "requests   " << report.requests << " (" << report.succeeded << " ok, "
      << report.requests - report.succeeded << " failed)\n"
      << "images/s   " << fixed_text(report.images_per_second(), 1) << '\n';
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

int run_bench(CommandContext& context, const ParsedArgs& args) {
  const std::string op = args.value_or("op", "reconstruct");
  if (op != "reconstruct" && op != "compress" && op != "decompose") {
    throw UsageError("--op expects reconstruct, compress or decompose");
  }
  const auto image = args.value("image");
  auto id = args.value("id");
  if (op == "reconstruct" && !image && !id) throw UsageError("bench reconstruct needs --image FILE or --id ID");
  if (op != "reconstruct" && !image) throw UsageError("bench " + op + " needs --image FILE");
  if (op != "reconstruct" && id) throw UsageError("--id applies to --op reconstruct");
  std::uint32_t rank = kDefaultBenchRank;
  if (const auto text = args.value("rank")) rank = parse_uint32(*text, "--rank");
  if (rank == 0) throw UsageError("--rank must be at least 1");
  const auto format = parse_output_format(args.value_or("format", "u8"));
  const auto concurrency = concurrency_from(args);
  const auto duration_text = args.value("duration");
  const auto count_text = args.value("count");
  if (duration_text && count_text) throw UsageError("give --duration or --count, not both");
  const std::uint64_t warmup = args.has("warmup") ? parse_uint64(*args.value("warmup"), "--warmup") : 0;
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

  // The images this run creates on the server, deleted at the end.
  std::vector<std::string> created_ids;
  std::vector<Call> calls;
  v1::ReconstructRequest reconstruct_request;
  v1::CompressRequest compress_request;
  std::vector<v1::DecomposeRequest> decompose_requests(concurrency);

  if (op == "reconstruct") {
    if (!id) {
      id = "bench-" + stem;
      const auto decomposed = client.decompose(encoded, max_rank, *id);
      if (!decomposed) return report_error(context.err(), decomposed.status());
      created_ids.push_back(*id);
    }
    reconstruct_request.set_id(*id);
    reconstruct_request.set_rank(rank);
    reconstruct_request.set_format(format);
    calls.assign(concurrency, [&] { return client.reconstruct(reconstruct_request).status(); });
  } else if (op == "compress") {
    compress_request.mutable_image()->set_encoded(encoded);
    compress_request.set_rank(rank);
    compress_request.set_format(format);
    calls.assign(concurrency, [&] { return client.compress(compress_request).status(); });
  } else {
    // One id per caller, so the store holds C images however long the run.
    for (std::size_t c = 0; c < concurrency; ++c) {
      auto& request = decompose_requests[c];
      request.mutable_image()->set_encoded(encoded);
      request.set_max_rank(max_rank);
      request.set_id("bench-" + stem + "-" + std::to_string(c));
      created_ids.push_back(request.id());
      calls.emplace_back([&client, &request] { return client.decompose(request).status(); });
    }
  }

  if (warmup > 0) {
    auto warmup_stop = StopCondition::after_count(warmup);
    static_cast<void>(run_closed_loop(calls, warmup_stop));
  }

  const auto duration = duration_text ? parse_seconds(*duration_text, "--duration")
                                      : std::chrono::milliseconds(kDefaultDuration);
  const auto start = Clock::now();
  auto stop = count_text ? StopCondition::after_count(parse_uint64(*count_text, "--count"))
                         : StopCondition::at(start + duration);
  if (!context.json()) {
    context.err() << "bench " << op << " on " << context.globals().server << ": " << concurrency << " callers, "
                  << (count_text ? *count_text + " requests" : fixed_text(duration.count() / 1000.0, 1) + " s")
                  << "...\n";
  }
  const auto logs = run_closed_loop(calls, stop);
  const double elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();

  for (const auto& created : created_ids) static_cast<void>(client.delete_image(created));

  BenchReport report{.op = op,
                     .server = context.globals().server,
                     .image = image.value_or(""),
                     .id = op == "reconstruct" ? *id : std::string(),
                     .rank = op == "decompose" ? 0 : rank,
                     .format = op == "decompose" ? "" : std::string(output_format_name(format)),
                     .concurrency = concurrency,
                     .elapsed_s = elapsed_s};
  std::vector<double> latencies;
  std::uint64_t unreachable = 0;
  for (const auto& log : logs) {
    report.requests += log.requests;
    report.succeeded += log.latencies_ms.size();
    latencies.insert(latencies.end(), log.latencies_ms.begin(), log.latencies_ms.end());
    for (const auto& [code, count] : log.errors) {
      report.errors[std::string(status_code_name(code))] += count;
      if (is_unreachable(code)) unreachable += count;
    }
  }
  report.latency = summarize_latencies(std::move(latencies));

  if (json_file) {
    const std::string text = bench_report_json(report);
    if (*json_file == "-") {
      context.out() << text;
    } else {
      try {
        write_file_bytes(*json_file, text);
      } catch (const std::runtime_error& error) {
        return report_error(context.err(), error.what());
      }
    }
  }
  if (context.json()) {
    if (!json_file || *json_file != "-") context.out() << bench_report_json(report);
  } else if (!json_file || *json_file != "-") {
    print_text(context.out(), report);
  }

  const std::uint64_t failed = report.requests - report.succeeded;
  if (failed == 0) return to_int(ExitCode::ok);
  return to_int(report.succeeded == 0 && unreachable == failed ? ExitCode::unreachable : ExitCode::failed);
}

}  // namespace

std::vector<Command> bench_commands() {
  return {Command{
      .name = "bench",
      .synopsis = "[--op reconstruct|compress|decompose] (--image FILE | --id ID) [--rank K] [--concurrency C]\n"
                  "       [--duration SECONDS | --count N] [--warmup N] [--format png|u8|f32] [--json FILE]",
      .summary = "closed-loop load: C callers back to back; images/s, latency percentiles, errors",
      .options = {{"op", "OP", "reconstruct (default), compress or decompose"},
                  {"image", "FILE", "the image to send (reconstruct: decomposed first as bench-<stem>)"},
                  {"id", "ID", "reconstruct an image already on the server instead"},
                  {"rank", "K", "rank of each reconstruction (default 16)"},
                  {"max-rank", "R", "--max-rank of the decompositions (default: the server's)"},
                  kConcurrencyOption,
                  {"duration", "SECONDS", "how long to run (default 10)"},
                  {"count", "N", "how many requests to send, instead of --duration"},
                  {"warmup", "N", "requests sent first and not measured (default 0)"},
                  {"format", "FMT", "png, u8 (default) or f32"},
                  {"json", "FILE", "also write the report as JSON to FILE ('-': stdout only)"}},
      .max_positionals = 0,
      .run = run_bench,
  }};
}

}  // namespace svdserve::cli
