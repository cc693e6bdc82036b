#pragma once
// The gRPC face of svdserve: callback (reactor) handlers that validate a request, hand a job to
// the pipeline and return at once; the pipeline's completion finishes the RPC.

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/backend.hpp"
#include "server/grpc/authorizer.hpp"
#include "server/grpc/call_metrics.hpp"
#include "server/grpc/parsed_call.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/stream_budget.hpp"
#include "server/grpc/unary_call.hpp"
#include "server/grpc/unsent_bytes_budget.hpp"
#include "server/runtime/factor_store.hpp"
#include "server/repository/factor_cache.hpp"
#include "server/runtime/job.hpp"
#include "server/runtime/load_roots.hpp"
#include "server/runtime/pipeline.hpp"
#include "server/runtime/rank_validator.hpp"
#include "svdserve/v1/config.pb.h"
#include "svdserve/v1/svdserve.grpc.pb.h"

namespace svdserve {

// What every handler needs. Owned by the Server; outlives the service.
struct ServiceContext {
  const v1::ServerConfig& config;
  Backend& backend;
  FactorStore& store;
  FactorCache& cache;  // the store in front of the repository: finds, persists and deletes
  Pipeline& pipeline;
  CallMetrics& metrics;         // calls by method and code; GetStats reads it
  StreamBudget& stream_budget;  // what all ReconstructStream calls together may have computing
  UnsentBytesBudget& unsent_bytes;  // response bytes not yet sent, of every call
  const Authorizer& authorizer;     // every call asks it first
  int64_t started_unix_ms = 0;
};

// Every method is raw: requests and responses are ByteBuffers. Reconstruct and ReconstructStream
// answer with the pixel buffer itself (reconstruct_response_encoder.hpp); the others parse their
// request and serialize their response around a typed handler (parsed_call.hpp), so that bytes
// that are not the request are INVALID_ARGUMENT with a message, not gRPC's typed handlers'
// UNIMPLEMENTED. This is v1::SvdServe::CallbackService in its raw form, in the proto's order; a
// method missing here would be a synchronous one, answered UNIMPLEMENTED.
namespace service_base {
using S = v1::SvdServe;
using Methods = S::WithRawCallbackMethod_Decompose<S::WithRawCallbackMethod_Reconstruct<
    S::WithRawCallbackMethod_ReconstructBatch<S::WithRawCallbackMethod_ReconstructStream<
        S::WithRawCallbackMethod_ReconstructProgressive<S::WithRawCallbackMethod_Compress<
            S::WithRawCallbackMethod_GetImage<S::WithRawCallbackMethod_ListImages<
                S::WithRawCallbackMethod_DeleteImage<S::WithRawCallbackMethod_LoadDirectory<
                    S::WithRawCallbackMethod_GetServerInfo<S::WithRawCallbackMethod_GetStats<
                        S::WithRawCallbackMethod_Echo<S::WithRawCallbackMethod_StartProfiling<
                            S::WithRawCallbackMethod_StopProfiling<S::Service>>>>>>>>>>>>>>>;
}  // namespace service_base
using SvdServiceBase = service_base::Methods;

class SvdService final : public SvdServiceBase {
 public:
  explicit SvdService(ServiceContext context);
  ~SvdService() override;  // joins LoadDirectory threads

  // After this, new calls are answered UNAVAILABLE (the server is draining), and open
  // ReconstructStream calls end once every request they read is answered.
  void stop_accepting();

  // A streaming call with no end of its own (ReconstructStream): stop_accepting() ends it.
  class OpenStream {
   public:
    // Read no more requests; finish once every request read is answered. Called once, with the
    // service's lock on its open streams held, so the stream cannot go away meanwhile.
    virtual void end_for_drain() = 0;

   protected:
    ~OpenStream() = default;
  };
  // Registers a stream until untrack(); false when the service is draining already.
  [[nodiscard]] bool track(OpenStream& stream);
  void untrack(OpenStream& stream);

  grpc::ServerUnaryReactor* Decompose(grpc::CallbackServerContext* ctx,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  // Parses a ReconstructRequest from `request`; answers a ReconstructResponse without copying
  // the pixels (see SvdServiceBase).
  grpc::ServerUnaryReactor* Reconstruct(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReconstructBatch(grpc::CallbackServerContext* ctx,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;
  // ReconstructRequests in, ReconstructStreamResponses out, pixels not copied (as Reconstruct).
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ReconstructStream(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* ReconstructProgressive(
      grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Compress(grpc::CallbackServerContext* ctx,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetImage(grpc::CallbackServerContext* ctx,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListImages(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* DeleteImage(grpc::CallbackServerContext* ctx,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* LoadDirectory(grpc::CallbackServerContext* ctx,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* ctx,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  // Runs on the callback thread: no pipeline, so it measures the transport alone.
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* ctx,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* StartProfiling(grpc::CallbackServerContext* ctx,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* StopProfiling(grpc::CallbackServerContext* ctx,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;

  // Shared by the reactors in stream_reactors.cpp.
  // The caller of ctx's call of `method`; throws Unauthenticated or PermissionDenied.
  [[nodiscard]] Caller authorize(grpc::CallbackServerContext* ctx, const char* method) const {
    return context_.authorizer.authorize(*ctx, method);
  }
  // A reconstruct job of `method` for one request item of `caller`, with the factors looked up
  // (in the caller's namespace) and the deadline and cancellation of ctx attached. Throws on a
  // bad request (unknown id, bad rank, draining).
  [[nodiscard]] JobPtr make_reconstruct_job(grpc::CallbackServerContext* ctx,
                                            const v1::ReconstructRequest& request,
                                            const char* method, const Caller& caller);
  // Counts a streaming call (unary calls count themselves through UnaryCall).
  void record(const char* method, const grpc::Status& status) {
    context_.metrics.record_call(method, status.error_code());
  }
  // Counts one item of a ReconstructStream or ReconstructBatch call.
  void record_item(const char* method, grpc::StatusCode code) {
    context_.metrics.record_item(method, code);
  }
  [[nodiscard]] const ServiceContext& context() const noexcept { return context_; }
  [[nodiscard]] StreamBudget& stream_budget() const noexcept { return context_.stream_budget; }
  [[nodiscard]] UnsentBytesBudget& unsent_bytes() const noexcept { return context_.unsent_bytes; }

 private:
  // The one way a typed unary handler runs and ends (unary_call.hpp): once its caller is
  // authorized and its request parsed, `start(call, caller, request, response)`.
  template <typename Request, typename Response, typename Start>
  grpc::ServerUnaryReactor* unary(grpc::CallbackServerContext* ctx, const char* method,
                                  const grpc::ByteBuffer* request_bytes,
                                  grpc::ByteBuffer* response_bytes, Start&& start) {
    const auto messages = std::make_shared<ParsedCall<Request, Response>>(response_bytes);
    return run_unary(
        ctx, method, context_.metrics,
        [&](const UnaryCall& call) {
          const Caller caller = authorize(ctx, method);
          parse_request(*request_bytes, messages->request);
          std::forward<Start>(start)(call, caller, &messages->request, &messages->response);
        },
        messages);
  }
  // A unary handler whose response counts against the unsent-bytes budget:
  // `start(call, caller, reactor)` validates, then hands its work to
  // reactor.start_after_reserving. Raw (Reconstruct): the handler parses and answers bytes.
  template <typename Start>
  grpc::ServerUnaryReactor* budgeted(grpc::CallbackServerContext* ctx, const char* method,
                                     Start&& start) {
    auto* reactor = new BudgetedUnaryReactor(context_.unsent_bytes);
    return run_unary(reactor, method, context_.metrics, [&](const UnaryCall& call) {
      const Caller caller = authorize(ctx, method);
      std::forward<Start>(start)(call, caller, *reactor);
    });
  }
  // The same, typed: `start(call, caller, reactor, request, response)`.
  template <typename Request, typename Response, typename Start>
  grpc::ServerUnaryReactor* budgeted(grpc::CallbackServerContext* ctx, const char* method,
                                     const grpc::ByteBuffer* request_bytes,
                                     grpc::ByteBuffer* response_bytes, Start&& start) {
    const auto messages = std::make_shared<ParsedCall<Request, Response>>(response_bytes);
    auto* reactor = new BudgetedUnaryReactor(context_.unsent_bytes);
    return run_unary(
        reactor, method, context_.metrics,
        [&](const UnaryCall& call) {
          const Caller caller = authorize(ctx, method);
          parse_request(*request_bytes, messages->request);
          std::forward<Start>(start)(call, caller, *reactor, &messages->request,
                                     &messages->response);
        },
        messages);
  }
  // A typed handler that answers on the callback thread: `respond(caller, request, response)`
  // fills the response.
  template <typename Request, typename Response, typename Respond>
  grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* ctx, const char* method,
                                   const grpc::ByteBuffer* request_bytes,
                                   grpc::ByteBuffer* response_bytes, Respond&& respond) {
    const auto messages = std::make_shared<ParsedCall<Request, Response>>(response_bytes);
    return answer_unary(
        ctx, method, context_.metrics,
        [&] {
          const Caller caller = authorize(ctx, method);
          parse_request(*request_bytes, messages->request);
          std::forward<Respond>(respond)(caller, &messages->request, &messages->response);
        },
        messages);
  }

  void check_accepting() const;
  // `method` names the RPC in metrics: a string literal.
  [[nodiscard]] JobPtr make_job(grpc::CallbackServerContext* ctx, JobKind kind,
                                const char* method) const;
  [[nodiscard]] std::string next_image_id();

  ServiceContext context_;
  const RankValidator ranks_;
  const LoadRoots load_roots_;  // what LoadDirectory may read
  std::atomic<bool> draining_{false};  // set under open_streams_mutex_, read without it
  std::mutex open_streams_mutex_;
  std::set<OpenStream*> open_streams_;  // guarded by open_streams_mutex_
  const std::string id_prefix_;  // of the ids Decompose makes up (next_image_id)
  std::atomic<uint64_t> next_id_{1};

  struct DirectoryLoad {
    std::atomic<bool> done{false};
    std::jthread thread;
  };
  std::mutex directory_loads_mutex_;
  std::vector<std::unique_ptr<DirectoryLoad>> directory_loads_;  // guarded by directory_loads_mutex_
};

}  // namespace svdserve
