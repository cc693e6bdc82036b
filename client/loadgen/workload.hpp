#pragma once
// What a load generator's callers send, and one measured run of it. A workload is the call each
// caller repeats, a serialized request (its size, and the bytes an echo of the same size carries),
// the images one call carries, and once probed the size of its answer.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "client/client.hpp"
#include "client/loadgen/bench_report.hpp"
#include "client/loadgen/client_pool.hpp"

namespace svdserve::loadgen {

struct Workload {
  std::string op{};  // reconstruct, stream, compress, decompose, echo
  // Caller c's next call on the given client.
  std::function<grpc::Status(const Client& client, std::size_t caller)> call{};
  std::size_t images_per_call = 1;  // stream: items per stream.
  std::string request_wire{};       // One serialized request of this workload.
  std::size_t response_bytes = 0;   // Serialized response size, once known (echo, or after a probe).
  // One unmeasured call; the serialized size of its response. Unset for echo.
  std::function<CallResult<std::size_t>(const Client& client)> probe{};
};

// Reconstruct with the same request, again and again.
[[nodiscard]] Workload reconstruct_workload(const v1::ReconstructRequest& request);
// Caller c reconstructs requests[c % size] (at least one), again and again.
[[nodiscard]] Workload reconstruct_workload(std::vector<v1::ReconstructRequest> requests);
// One ReconstructStream of items copies of request per call (as `svdserve-cli run` streams);
// the probe is one Reconstruct, the size of one item's answer.
[[nodiscard]] Workload stream_workload(const v1::ReconstructRequest& request, std::uint32_t items);
[[nodiscard]] Workload compress_workload(const v1::CompressRequest& request);
// Caller c sends requests[c % size] (at least one): with one id per caller the store holds a
// fixed number of images however long the run.
[[nodiscard]] Workload decompose_workload(std::vector<v1::DecomposeRequest> requests);
// Echo with the request size of workload and an answer of response_bytes: what the transport
// alone costs for the same sizes. The payload is workload's request bytes, repeated.
[[nodiscard]] Workload echo_workload_like(const Workload& workload, std::size_t response_bytes);

// One ReconstructStream of items: its own status, else the first failed item's (an item's error
// travels in its response), else OK.
[[nodiscard]] grpc::Status stream_status(const Client& client, std::span<const v1::ReconstructRequest> items);

// How long a measured run lasts, and what comes before it.
struct RunLength {
  std::optional<std::uint64_t> count{};  // Requests in all; else the run lasts duration.
  std::chrono::milliseconds duration{0};
  std::uint64_t warmup = 0;  // Unmeasured requests before the run.
};

// Runs workload closed-loop with concurrency callers spread round-robin over pool; returns
// report with the run's op, sizes, counts and latencies filled in (the rest as given).
[[nodiscard]] BenchReport measure(const Workload& workload, const ClientPool& pool, std::size_t concurrency,
                                  const RunLength& length, BenchReport report);

// Images a run decomposed for itself, deleted when it ends however it ends.
class CreatedImages {
 public:
  explicit CreatedImages(const Client& client) : client_(client) {}
  CreatedImages(const CreatedImages&) = delete;
  CreatedImages& operator=(const CreatedImages&) = delete;
  ~CreatedImages();

  void add(std::string id) { ids_.push_back(std::move(id)); }

 private:
  const Client& client_;
  std::vector<std::string> ids_;
};

}  // namespace svdserve::loadgen
