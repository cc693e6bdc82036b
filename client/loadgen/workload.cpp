#include "client/loadgen/workload.hpp"

#include <algorithm>
#include <memory>
#include <utility>

#include "client/loadgen/closed_loop.hpp"
#include "client/loadgen/echo_sizing.hpp"

namespace svdserve::loadgen {
namespace {

template <class Response>
CallResult<std::size_t> response_size(const CallResult<Response>& result) {
  if (!result) return result.status();
  return result->ByteSizeLong();
}

// The same unary call again and again; the probe makes it once more and sizes its answer.
template <class Request, class Response>
Workload unary_workload(std::string op, const Request& request,
                        CallResult<Response> (Client::*method)(const Request&) const) {
  auto shared = std::make_shared<const Request>(request);
  return Workload{
      .op = std::move(op),
      .call = [shared, method](const Client& client, std::size_t) { return (client.*method)(*shared).status(); },
      .request_wire = shared->SerializeAsString(),
      .probe = [shared, method](const Client& client) { return response_size((client.*method)(*shared)); },
  };
}

}  // namespace

Workload reconstruct_workload(const v1::ReconstructRequest& request) {
  return unary_workload("reconstruct", request, &Client::reconstruct);
}

Workload reconstruct_workload(std::vector<v1::ReconstructRequest> requests) {
  Workload workload = reconstruct_workload(requests.front());
  auto shared = std::make_shared<const std::vector<v1::ReconstructRequest>>(std::move(requests));
  workload.call = [shared](const Client& client, std::size_t caller) {
    return client.reconstruct((*shared)[caller % shared->size()]).status();
  };
  return workload;
}

Workload stream_workload(const v1::ReconstructRequest& request, std::uint32_t items) {
  Workload workload = reconstruct_workload(request);
  workload.op = "stream";
  workload.images_per_call = items;
  workload.call = [stream = std::make_shared<const std::vector<v1::ReconstructRequest>>(items, request)](
                      const Client& client, std::size_t) { return stream_status(client, *stream); };
  return workload;
}

Workload compress_workload(const v1::CompressRequest& request) {
  return unary_workload("compress", request, &Client::compress);
}

Workload decompose_workload(std::vector<v1::DecomposeRequest> requests) {
  auto shared = std::make_shared<const std::vector<v1::DecomposeRequest>>(std::move(requests));
  return Workload{
      .op = "decompose",
      .call = [shared](const Client& client, std::size_t caller) {
        return client.decompose((*shared)[caller % shared->size()]).status();
      },
      .request_wire = shared->front().SerializeAsString(),
      .probe = [shared](const Client& client) { return response_size(client.decompose(shared->front())); },
  };
}

Workload echo_workload_like(const Workload& workload, std::size_t response_bytes) {
  auto request = std::make_shared<const v1::EchoRequest>(
      echo_request_matching(workload.request_wire, workload.request_wire.size(), response_bytes));
  return Workload{
      .op = "echo",
      .call = [request](const Client& client, std::size_t) { return client.echo(*request).status(); },
      .request_wire = request->SerializeAsString(),
      .response_bytes = echo_response_wire_bytes(*request),
  };
}

grpc::Status stream_status(const Client& client, std::span<const v1::ReconstructRequest> items) {
  grpc::Status first_failure = grpc::Status::OK;
  grpc::Status status = client.reconstruct_stream(items, [&](std::size_t, v1::ReconstructStreamResponse& response) {
    if (first_failure.ok()) first_failure = item_status(response.status());
  });
  return status.ok() ? first_failure : status;
}

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

CreatedImages::~CreatedImages() {
  for (const auto& id : ids_) static_cast<void>(client_.delete_image(id));  // Best effort.
}

}  // namespace svdserve::loadgen
