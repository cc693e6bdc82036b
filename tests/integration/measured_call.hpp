#pragma once
// A call to a server process, measured from outside: its status, how long it took and how much
// the server's peak resident memory grew meanwhile. For attack tests, whose bounds are on time
// and memory as well as on the answer.

#include <gtest/gtest.h>
#include <grpcpp/support/status.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server_process.hpp"

namespace svdserve::testing {

struct MeasuredCall {
  grpc::Status status;
  std::chrono::duration<double> took{0};
  int64_t peak_growth_bytes = 0;
};

inline MeasuredCall measure_call(pid_t server, const std::function<grpc::Status()>& call) {
  const auto peak = [server] { return static_cast<int64_t>(memory_of(server).peak_rss_bytes); };
  const int64_t peak_before = peak();
  const auto start = std::chrono::steady_clock::now();
  MeasuredCall measured;
  measured.status = call();
  measured.took = std::chrono::steady_clock::now() - start;
  measured.peak_growth_bytes = peak() - peak_before;
  return measured;
}

// Refused by the server itself with `code`, its message holding every part, within the bounds.
inline void expect_refused(const MeasuredCall& call, grpc::StatusCode code,
                           const std::vector<std::string>& parts,
                           std::chrono::duration<double> max_time, int64_t max_peak_growth_bytes) {
  EXPECT_EQ(call.status.error_code(), code) << call.status.error_message();
  for (const std::string& part : parts) {
    EXPECT_NE(call.status.error_message().find(part), std::string::npos)
        << "no '" << part << "' in: " << call.status.error_message();
  }
  EXPECT_LT(call.took.count(), max_time.count()) << "seconds";
  EXPECT_LT(call.peak_growth_bytes, max_peak_growth_bytes);
}

}  // namespace svdserve::testing
