#include "server/grpc/service.hpp"

#include <algorithm>

#include "kernels/errors.hpp"
#include "server/grpc/reconstruct_response_encoder.hpp"
#include "server/grpc/request_translation.hpp"
#include "server/grpc/response_fields.hpp"
#include "server/runtime/image_codec.hpp"
#include "server/runtime/logger.hpp"

namespace svdserve {
namespace {

// Room Echo leaves below max_message_bytes for framing: the headroom a reconstruction's output
// keeps too (server.cpp), so any size a reconstruction can answer, Echo can.
constexpr uint64_t kEchoHeadroomBytes = 64 * 1024;

void check_has_image(const v1::ImageInput& image) {
  if (image.source_case() == v1::ImageInput::SOURCE_NOT_SET) {
    throw InvalidArgument("request has no image: set image.encoded or image.raw");
  }
}

}  // namespace

SvdService::SvdService(ServiceContext context)
    : context_(context),
      ranks_(context.config.default_max_rank(), context.config.max_rank()) {}

SvdService::~SvdService() {
  std::lock_guard lock(directory_loads_mutex_);
  directory_loads_.clear();  // joins
}

void SvdService::stop_accepting() {
  std::lock_guard lock(open_streams_mutex_);
  draining_.store(true);
  for (OpenStream* stream : open_streams_) stream->end_for_drain();
}

bool SvdService::track(OpenStream& stream) {
  std::lock_guard lock(open_streams_mutex_);
  if (draining_.load()) return false;
  open_streams_.insert(&stream);
  return true;
}

void SvdService::untrack(OpenStream& stream) {
  std::lock_guard lock(open_streams_mutex_);
  open_streams_.erase(&stream);
}

void SvdService::check_accepting() const {
  if (draining_.load()) throw Unavailable("server is shutting down; retry on another instance");
}

JobPtr SvdService::make_job(grpc::CallbackServerContext* ctx, JobKind kind) const {
  auto job = std::make_unique<Job>();
  job->kind = kind;
  job->deadline = to_steady_deadline(ctx->deadline());
  job->is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return job;
}

std::string SvdService::next_image_id() {
  return "img-" + std::to_string(next_id_.fetch_add(1));
}

JobPtr SvdService::make_reconstruct_job(grpc::CallbackServerContext* ctx,
                                        const v1::ReconstructRequest& request) {
  check_accepting();
  const OutputFormat format = output_format_of(request.format());
  const uint32_t jpeg_quality = jpeg_quality_of(request.jpeg_quality());
  if (request.id().empty()) throw InvalidArgument("id is empty; say which image to reconstruct");
  check_image_id(request.id());
  JobPtr job = make_job(ctx, JobKind::reconstruct);
  job->image_id = request.id();
  job->rank_choice = ranks_.selection(request.rank(), energy_fraction_of(request));
  job->format = format;
  job->jpeg_quality = jpeg_quality;
  job->factors = context_.store.find(request.id());
  // Refused before queueing.
  job->rank = RankValidator::resolve(job->rank_choice, *job->factors);
  check_output_format(format, job->factors->shape());
  return job;
}

grpc::ServerUnaryReactor* SvdService::Decompose(grpc::CallbackServerContext* ctx,
                                                const v1::DecomposeRequest* request,
                                                v1::DecomposeResponse* response) {
  return unary(ctx, "Decompose", [&](const UnaryCall& call) {
    check_accepting();
    const uint32_t max_rank = ranks_.rank_to_keep(request->max_rank());
    check_image_id(request->id());
    check_has_image(request->image());
    JobPtr job = make_job(ctx, JobKind::decompose);
    job->source = image_source_of(request->image());
    job->image_id = request->id().empty() ? next_image_id() : request->id();
    job->max_rank = max_rank;
    job->on_done = [call, response](Job& done, std::exception_ptr error) {
      call.finish(error, [&] {
        response->set_id(done.image_id);
        fill_shape(done.factors->shape(), response->mutable_shape());
        response->set_rank_kept(done.factors->rank_kept());
        fill_spectra(*done.factors, response->mutable_singular_values());
        response->set_bytes_resident(done.factors->bytes_resident());
        fill_timings(done, response->mutable_timings());
        if (!done.evicted_ids.empty()) {
          log().info("evicted count={} to fit id={}", done.evicted_ids.size(), done.image_id);
        }
      });
    };
    context_.pipeline.submit(std::move(job));
  });
}

grpc::ServerUnaryReactor* SvdService::Reconstruct(grpc::CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  return unary(ctx, "Reconstruct", [&](const UnaryCall& call) {
    JobPtr job = make_reconstruct_job(ctx, parse_reconstruct_request(*request));
    job->pixels_in_pool = true;
    job->on_done = [call, response](Job& done, std::exception_ptr error) {
      call.finish(error, [&] {
        v1::ReconstructResponse fields;
        fill_reconstruction_fields(done, &fields);
        grpc::ByteBuffer encoded = encode_reconstruct_response(fields, std::move(done.pixels));
        response->Swap(&encoded);  // the call owns the pixels from here; freed after sending
      });
    };
    context_.pipeline.submit(std::move(job));
  });
}

grpc::ServerUnaryReactor* SvdService::ReconstructBatch(grpc::CallbackServerContext* ctx,
                                                       const v1::ReconstructBatchRequest* request,
                                                       v1::ReconstructBatchResponse* response) {
  return unary(ctx, "ReconstructBatch", [&](const UnaryCall& call) {
    check_accepting();
    const int count = request->items_size();
    if (count == 0) throw InvalidArgument("batch has no items");
    if (static_cast<uint32_t>(count) > context_.config.max_batch_items()) {
      throw InvalidArgument("batch has " + std::to_string(count) + " items; the limit is " +
                            std::to_string(context_.config.max_batch_items()) +
                            " (max_batch_items); split it or use ReconstructStream");
    }
    for (int i = 0; i < count; ++i) response->add_items();
    // One count per item plus one for this loop, so the RPC cannot finish while still submitting.
    auto remaining = std::make_shared<std::atomic<int>>(count + 1);
    auto item_done = [call, remaining] {
      if (remaining->fetch_sub(1) == 1) call.finish(grpc::Status::OK);
    };
    for (int i = 0; i < count; ++i) {
      v1::ReconstructStreamResponse* slot = response->mutable_items(i);
      try {
        JobPtr job = make_reconstruct_job(ctx, request->items(i));
        job->on_done = [slot, item_done](Job& done, std::exception_ptr error) {
          fill_status(to_status(error), slot->mutable_status());
          if (!error) fill_reconstruction(done, slot->mutable_result());
          item_done();
        };
        context_.pipeline.submit(std::move(job));
      } catch (...) {
        fill_status(to_status(std::current_exception()), slot->mutable_status());
        item_done();
      }
    }
    item_done();
  });
}

grpc::ServerUnaryReactor* SvdService::Compress(grpc::CallbackServerContext* ctx,
                                               const v1::CompressRequest* request,
                                               v1::CompressResponse* response) {
  return unary(ctx, "Compress", [&](const UnaryCall& call) {
    check_accepting();
    const OutputFormat format = output_format_of(request->format());
    const uint32_t jpeg_quality = jpeg_quality_of(request->jpeg_quality());
    check_has_image(request->image());
    JobPtr job = make_job(ctx, JobKind::compress);
    job->source = image_source_of(request->image());
    job->rank_choice = ranks_.compress_selection(request->rank(), energy_fraction_of(*request));
    job->format = format;
    job->jpeg_quality = jpeg_quality;
    job->on_done = [call, response](Job& done, std::exception_ptr error) {
      call.finish(error, [&] {
        fill_shape(done.factors->shape(), response->mutable_shape());
        response->set_rank(done.rank);
        response->set_relative_error(done.relative_error);
        response->set_format(to_proto(done.format));
        *response->mutable_pixels() = done.pixels.take_string();
        fill_timings(done, response->mutable_timings());
      });
    };
    context_.pipeline.submit(std::move(job));
  });
}

grpc::ServerUnaryReactor* SvdService::GetImage(grpc::CallbackServerContext* ctx,
                                               const v1::GetImageRequest* request,
                                               v1::GetImageResponse* response) {
  return answer(ctx, "GetImage", [&] {
    check_image_id(request->id());
    const auto info = context_.store.info(request->id());
    if (!info) throw NotFound("no image with id " + quote_client_text(request->id()));
    fill_info(*info, response->mutable_info());
    if (request->include_singular_values()) {
      if (auto factors = context_.store.peek(request->id())) {
        fill_spectra(*factors, response->mutable_singular_values());
      }
    }
  });
}

grpc::ServerUnaryReactor* SvdService::ListImages(grpc::CallbackServerContext* ctx,
                                                 const v1::ListImagesRequest* request,
                                                 v1::ListImagesResponse* response) {
  return answer(ctx, "ListImages", [&] {
    for (const auto& info : context_.store.list(request->include_evicted())) {
      fill_info(info, response->add_images());
    }
    response->set_bytes_resident(context_.store.bytes_resident());
    response->set_budget_bytes(context_.store.budget_bytes());
  });
}

grpc::ServerUnaryReactor* SvdService::DeleteImage(grpc::CallbackServerContext* ctx,
                                                  const v1::DeleteImageRequest* request,
                                                  v1::DeleteImageResponse* response) {
  return answer(ctx, "DeleteImage", [&] {
    check_image_id(request->id());
    response->set_bytes_freed(context_.store.erase(request->id()));
  });
}

grpc::ServerUnaryReactor* SvdService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                    const v1::GetServerInfoRequest*,
                                                    v1::GetServerInfoResponse* response) {
  return answer(ctx, "GetServerInfo", [&] {
    const auto& c = context_.config;
    response->set_version(SVDSERVE_VERSION);
    response->set_backend(context_.backend.name());
    response->set_device(context_.backend.device_description());
    response->set_memory_budget_bytes(context_.store.budget_bytes());
    response->set_memory_used_bytes(context_.store.bytes_resident());
    response->set_listen_address(c.listen_address());
    response->set_started_unix_ms(context_.started_unix_ms);
    auto* limits = response->mutable_limits();
    limits->set_max_image_width(c.max_image_width());
    limits->set_max_image_height(c.max_image_height());
    limits->set_max_image_bytes(c.max_image_bytes());
    limits->set_max_rank(c.max_rank());
    limits->set_default_max_rank(c.default_max_rank());
    limits->set_max_message_bytes(c.max_message_bytes());
    limits->set_max_batch_size(c.max_batch_size());
    limits->set_max_queue_delay_us(c.max_queue_delay_us());
    limits->set_queue_capacity(c.queue_capacity());
    limits->set_max_batch_items(c.max_batch_items());
    limits->set_decompose_queue_delay_us(c.decompose_queue_delay_us());
    limits->set_max_compute_ms(c.max_compute_ms());
  });
}

grpc::ServerUnaryReactor* SvdService::GetStats(grpc::CallbackServerContext* ctx,
                                               const v1::GetStatsRequest*,
                                               v1::GetStatsResponse* response) {
  return answer(ctx, "GetStats", [&] {
    context_.metrics.fill_stats(*response);
    const Pipeline& pipeline = context_.pipeline;
    response->set_decode_queue_depth(static_cast<uint32_t>(pipeline.decode_queue_depth()));
    response->set_compute_queue_depth(static_cast<uint32_t>(pipeline.compute_queue_depth()));
    response->set_images_resident(context_.store.images_resident());
    response->set_bytes_resident(context_.store.bytes_resident());
    response->set_evictions(context_.store.evictions());
    response->set_jobs_in_flight(static_cast<uint32_t>(pipeline.jobs_in_flight()));
  });
}

grpc::ServerUnaryReactor* SvdService::Echo(grpc::CallbackServerContext* ctx,
                                           const v1::EchoRequest* request,
                                           v1::EchoResponse* response) {
  return answer(ctx, "Echo", [&] {
    check_accepting();
    const uint64_t max_message_bytes = context_.config.max_message_bytes();
    const uint64_t limit =
        max_message_bytes > kEchoHeadroomBytes ? max_message_bytes - kEchoHeadroomBytes : 0;
    if (request->response_bytes() > limit) {
      throw InvalidArgument("response_bytes " + std::to_string(request->response_bytes()) +
                            " is above the limit of " + std::to_string(limit) +
                            " (max_message_bytes less 64 KiB); ask for fewer bytes or raise "
                            "max_message_bytes");
    }
    // The payload back, cut or zero-padded to size: one allocation and one copy, like a
    // reconstruction's output.
    const auto size = static_cast<std::size_t>(request->response_bytes());
    std::string* payload = response->mutable_payload();
    payload->assign(request->payload(), 0, std::min(size, request->payload().size()));
    payload->resize(size, '\0');
  });
}

grpc::ServerUnaryReactor* SvdService::StartProfiling(grpc::CallbackServerContext* ctx,
                                                     const v1::StartProfilingRequest*,
                                                     v1::StartProfilingResponse*) {
  return answer(ctx, "StartProfiling", [&] {
    context_.backend.start_profiling();
    log().info("profiling capture started");
  });
}

grpc::ServerUnaryReactor* SvdService::StopProfiling(grpc::CallbackServerContext* ctx,
                                                    const v1::StopProfilingRequest*,
                                                    v1::StopProfilingResponse*) {
  return answer(ctx, "StopProfiling", [&] {
    context_.backend.stop_profiling();
    log().info("profiling capture stopped");
  });
}

}  // namespace svdserve
