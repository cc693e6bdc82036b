#include "client/loadgen/sweep_report.hpp"

#include <iomanip>

#include "client/text_format.hpp"

namespace svdserve::loadgen {
namespace {

// Column widths of the table; the header and the rows share them.
constexpr int kConcurrencyWidth = 5;
constexpr int kRateWidth = 12;
constexpr int kLatencyWidth = 9;
constexpr int kFailedWidth = 6;
constexpr int kRatioWidth = 9;

void print_run_columns(std::ostream& out, const BenchReport& run) {
  out << std::setw(kRateWidth) << fixed_text(run.images_per_second(), 1) << std::setw(kLatencyWidth)
      << fixed_text(run.latency.p50_ms, 2) << std::setw(kLatencyWidth) << fixed_text(run.latency.p99_ms, 2)
      << std::setw(kFailedWidth) << run.failed();
}

void print_run_headers(std::ostream& out, const std::string& name) {
  out << std::setw(kRateWidth) << name + " img/s" << std::setw(kLatencyWidth) << "p50 ms" << std::setw(kLatencyWidth)
      << "p99 ms" << std::setw(kFailedWidth) << "fail";
}

}  // namespace

void print_sweep_table(std::ostream& out, const SweepReport& report) {
  if (report.rows.empty()) return;
  const BenchReport& first = report.rows.front().op;
  const BenchReport& first_echo = report.rows.front().echo;
  out << "bench " << first.op << " (op) vs echo of the same sizes";
  if (first.op != "decompose") out << ": rank " << first.rank << ", " << first.format;
  out << "; request " << first.request_bytes << " B (echo " << first_echo.request_bytes << " B), response "
      << first.response_bytes << " B (echo " << first_echo.response_bytes << " B); min(C, "
      << report.max_connections << ") connections; ";
  if (report.count > 0) {
    out << report.count << " requests per run\n";
  } else {
    out << fixed_text(report.duration_s, 1) << " s per run\n";
  }
  out << std::setw(kConcurrencyWidth) << "conc";
  print_run_headers(out, "op");
  print_run_headers(out, "echo");
  out << std::setw(kRatioWidth) << "op/echo" << '\n';
  for (const auto& row : report.rows) {
    out << std::setw(kConcurrencyWidth) << row.op.concurrency;
    print_run_columns(out, row.op);
    print_run_columns(out, row.echo);
    out << std::setw(kRatioWidth) << fixed_text(row.op_to_echo_ratio() * 100.0, 1) + "%" << '\n';
  }
}

std::string sweep_report_json(const SweepReport& report) {
  JsonWriter json;
  json.begin_object();
  if (!report.rows.empty()) {
    const BenchReport& first = report.rows.front().op;
    json.field("op", first.op)
        .field("server", first.server)
        .field("image", first.image)
        .field("id", first.id)
        .field("rank", first.rank)
        .field("format", first.format)
        .field("request_bytes", first.request_bytes)
        .field("response_bytes", first.response_bytes);
  }
  json.field("max_connections", report.max_connections)
      .field("duration_s", report.duration_s)
      .field("count", report.count);
  json.key("rows").begin_array();
  for (const auto& row : report.rows) {
    json.begin_object().field("concurrency", row.op.concurrency);
    json.key("op");
    write_bench_report(json, row.op);
    json.key("echo");
    write_bench_report(json, row.echo);
    json.field("op_to_echo_ratio", row.op_to_echo_ratio()).end_object();
  }
  json.end_array().end_object();
  return json.str() + "\n";
}

}  // namespace svdserve::loadgen
