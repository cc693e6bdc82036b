#pragma once
// The result of one measured run, as text and as JSON (the same numbers in both).

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "client/json_writer.hpp"
#include "client/loadgen/latency_stats.hpp"

namespace svdserve::loadgen {

struct BenchReport {
  std::string op;        // reconstruct, stream, compress, decompose, echo
  std::string server;
  std::string image;     // The local file, if any.
  std::string id;        // The resident image reconstructed, if any.
  std::uint32_t rank = 0;
  std::string format;    // png, u8, f32
  std::uint64_t concurrency = 0;
  std::uint64_t connections = 0;     // gRPC connections the callers shared.
  std::uint64_t request_bytes = 0;   // Serialized request message; 0 when not measured.
  std::uint64_t response_bytes = 0;  // Serialized response message; 0 when not measured.
  double elapsed_s = 0;  // Of the measured phase.
  std::uint64_t requests = 0;
  std::uint64_t succeeded = 0;
  std::uint64_t images_per_request = 1;  // stream: the items each call sends through one stream.
  std::map<std::string, std::uint64_t> errors{};  // By status code name.
  std::uint64_t unreachable = 0;                  // Errors that were UNAVAILABLE or DEADLINE_EXCEEDED.
  LatencySummary latency{};                       // Of the successful calls.

  [[nodiscard]] std::uint64_t failed() const noexcept { return requests - succeeded; }
  [[nodiscard]] double images_per_second() const noexcept {
    return elapsed_s > 0 ? static_cast<double>(succeeded * images_per_request) / elapsed_s : 0.0;
  }
};

// The report as text. imitated_op: the op whose sizes an echo run copies ("reconstruct" for
// reconstruct, stream and echo; else the op); decompose has no rank or format to show.
void print_bench_text(std::ostream& out, const BenchReport& report, std::string_view imitated_op);

// The report as one JSON object, written where json expects a value (for nesting).
void write_bench_report(JsonWriter& json, const BenchReport& report);
// The report as a JSON document, newline-terminated.
[[nodiscard]] std::string bench_report_json(const BenchReport& report);

}  // namespace svdserve::loadgen
