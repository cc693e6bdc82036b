#include "client/loadgen/bench_report.hpp"

#include "client/text_format.hpp"

namespace svdserve::loadgen {

void print_bench_text(std::ostream& out, const BenchReport& report, std::string_view imitated_op) {
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

void write_bench_report(JsonWriter& json, const BenchReport& report) {
  json.begin_object()
      .field("op", report.op)
      .field("server", report.server)
      .field("image", report.image)
      .field("id", report.id)
      .field("rank", report.rank)
      .field("format", report.format)
      .field("concurrency", report.concurrency)
      .field("connections", report.connections)
      .field("request_bytes", report.request_bytes)
      .field("response_bytes", report.response_bytes)
      .field("elapsed_s", report.elapsed_s)
      .field("requests", report.requests)
      .field("succeeded", report.succeeded)
      .field("images_per_request", report.images_per_request)
      .field("images_per_second", report.images_per_second());
  json.key("latency_ms")
      .begin_object()
      .field("count", std::uint64_t{report.latency.count})
      .field("min", report.latency.min_ms)
      .field("mean", report.latency.mean_ms)
      .field("p50", report.latency.p50_ms)
      .field("p90", report.latency.p90_ms)
      .field("p99", report.latency.p99_ms)
      .field("max", report.latency.max_ms)
      .end_object();
  json.key("errors").begin_object();
  for (const auto& [code, count] : report.errors) json.field(code, count);
  json.end_object().end_object();
}

std::string bench_report_json(const BenchReport& report) {
  JsonWriter json;
  write_bench_report(json, report);
  return json.str() + "\n";
}

}  // namespace svdserve::loadgen
