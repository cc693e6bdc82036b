#pragma once
// The result of a bench run, and its JSON form (the same numbers the text report prints).

#include <cstdint>
#include <map>
#include <string>

#include "client/cli/latency_stats.hpp"

namespace svdserve::cli {

struct BenchReport {
  std::string op;        // reconstruct, compress, decompose
  std::string server;
  std::string image;     // The local file, if any.
  std::string id;        // The resident image reconstructed, if any.
  std::uint32_t rank = 0;
  std::string format;    // png, u8, f32
  std::uint64_t concurrency = 0;
  double elapsed_s = 0;  // Of the measured phase.
  std::uint64_t requests = 0;
  std::uint64_t succeeded = 0;
  std::map<std::string, std::uint64_t> errors{};  // By status code name.
  LatencySummary latency{};                       // Of the successful calls.

  [[nodiscard]] double images_per_second() const noexcept {
    return elapsed_s > 0 ? static_cast<double>(succeeded) / elapsed_s : 0.0;
  }
};

[[nodiscard]] std::string bench_report_json(const BenchReport& report);

}  // namespace svdserve::cli
