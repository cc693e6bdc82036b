#include "client/cli/bench_report.hpp"

namespace svdserve::cli {

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

}  // namespace svdserve::cli
