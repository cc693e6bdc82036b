#include "server/grpc/service.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

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
// A protobuf response is held twice until sent: the message, and gRPC's serialized copy of it.
constexpr uint64_t kSerializedCopies = 2;
// ListImages pages: 1000 infos with 256-byte ids are about 300 KB, far below any message limit.
constexpr uint32_t kDefaultPageSize = 1000;
constexpr uint32_t kMaxPageSize = 10'000;
// What a ReconstructBatch answer adds around an item's pixels and id: its status, the result's
// other fields, tags and lengths (79 bytes for 512x512 RAW_F32 items).
constexpr uint64_t kBatchItemOverheadBytes = 128;

// "img-<48 random bits>-": ids made by this process never meet those of an earlier run or of
// another replica in a shared repository (a counter alone would start over at each start).
std::string fresh_id_prefix() {
  std::random_device random;
  const uint64_t bits = (uint64_t{random()} << 32 | random()) & 0xffff'ffff'ffffULL;
  char text[32];
  std::snprintf(text, sizeof(text), "img-%012llx-", static_cast<unsigned long long>(bits));
  return text;
}

void check_has_image(const v1::ImageInput& image) {
  if (image.source_case() == v1::ImageInput::SOURCE_NOT_SET) {
    throw InvalidArgument("request has no image: set image.encoded or image.raw");
  }
}

}  // namespace

SvdService::SvdService(ServiceContext context)
    : context_(context),
      ranks_(context.config.default_max_rank(), context.config.max_rank()),
      load_roots_({context.config.load_roots().begin(), context.config.load_roots().end()}),
      id_prefix_(fresh_id_prefix()) {}

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

JobPtr SvdService::make_job(grpc::CallbackServerContext* ctx, JobKind kind,
                            const char* method) const {
  auto job = std::make_unique<Job>();
  job->kind = kind;
  job->method = method;
  job->deadline = to_steady_deadline(ctx->deadline());
  job->is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return job;
}

std::string SvdService::next_image_id() {
  return id_prefix_ + std::to_string(next_id_.fetch_add(1));
}

JobPtr SvdService::make_reconstruct_job(grpc::CallbackServerContext* ctx,
                                        const v1::ReconstructRequest& request,
                                        const char* method, const Caller& caller) {
  check_accepting();
  const OutputFormat format = output_format_of(request.format());
  const uint32_t jpeg_quality = jpeg_quality_of(request.jpeg_quality());
  if (request.id().empty()) throw InvalidArgument("id is empty; say which image to reconstruct");
  check_image_id(request.id());
  JobPtr job = make_job(ctx, JobKind::reconstruct, method);
  job->image_id = request.id();  // as the client knows it: the answer names it
  job->rank_choice = ranks_.selection(request.rank(), energy_fraction_of(request));
  job->format = format;
  job->jpeg_quality = jpeg_quality;
  try {
    job->factors = context_.cache.find(caller.images.stored_id(request.id()));
  } catch (...) {
    std::rethrow_exception(caller.images.in_client_terms(std::current_exception(), request.id()));
  }
  // Refused before queueing.
  job->rank = RankValidator::resolve(job->rank_choice, *job->factors);
  check_output_format(format, job->factors->shape());
  return job;
}

grpc::ServerUnaryReactor* SvdService::Decompose(grpc::CallbackServerContext* ctx,
                                                const grpc::ByteBuffer* request_bytes,
                                                grpc::ByteBuffer* response_bytes) {
  return unary<v1::DecomposeRequest, v1::DecomposeResponse>(
      ctx, "Decompose", request_bytes, response_bytes,
      [&](const UnaryCall& call, const Caller& caller, const v1::DecomposeRequest* request,
          v1::DecomposeResponse* response) {
        check_image_id(request->id());  // before the audit line: no control characters in the log
        std::string client_id = request->id().empty() ? next_image_id() : request->id();
        audit(*ctx, caller, "Decompose", client_id);
        check_accepting();
        const uint32_t max_rank = ranks_.rank_to_keep(request->max_rank());
        check_has_image(request->image());
        JobPtr job = make_job(ctx, JobKind::decompose, "Decompose");
        job->source = image_source_of(request->image());
        job->image_id = caller.images.stored_id(client_id);
        job->max_rank = max_rank;
        job->on_done = [call, response, images = caller.images, client_id = std::move(client_id),
                        &store = context_.store, &cache = context_.cache](
                           Job& done, std::exception_ptr error) {
          if (!error) {
            try {
              response->set_id(client_id);
              fill_shape(done.factors->shape(), response->mutable_shape());
              response->set_rank_kept(done.factors->rank_kept());
              fill_spectra(*done.factors, response->mutable_singular_values());
              response->set_bytes_resident(store.counted_bytes(done.image_id, *done.factors));
              fill_timings(done, response->mutable_timings());
            } catch (...) {
              error = std::current_exception();
            }
          }
          if (error) {
            call.finish(images.in_client_terms(error, client_id), [] {});
            return;
          }
          if (!done.evicted_ids.empty()) {
            log().info("evicted count={} to fit id={}", done.evicted_ids.size(), done.image_id);
          }
          // Answered once the repository has the factors, as the durability says; the job is
          // gone by then, the response is filled.
          cache.persist(done.image_id, done.factors,
                        [call, images, client_id](std::exception_ptr failure) {
                          call.finish(images.in_client_terms(failure, client_id), [] {});
                        });
        };
        context_.pipeline.submit(std::move(job));
      });
}

grpc::ServerUnaryReactor* SvdService::Reconstruct(grpc::CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  return budgeted(ctx, "Reconstruct", [&](const UnaryCall& call, const Caller& caller,
                                          BudgetedUnaryReactor& reactor) {
    JobPtr job =
        make_reconstruct_job(ctx, parse_reconstruct_request(*request), "Reconstruct", caller);
    job->pixels_in_pool = true;
    job->on_done = [call, response](Job& done, std::exception_ptr error) {
      call.finish(error, [&] {
        v1::ReconstructResponse fields;
        fill_reconstruction_fields(done, &fields);
        grpc::ByteBuffer encoded = encode_reconstruct_response(fields, std::move(done.pixels));
        response->Swap(&encoded);  // the call owns the pixels from here; freed after sending
      });
    };
    const uint64_t bytes = reconstruction_bytes(job->factors->shape(), job->format);
    auto pending = std::make_shared<JobPtr>(std::move(job));
    reactor.start_after_reserving(
        bytes, call, [this, pending] { context_.pipeline.submit(std::move(*pending)); });
  });
}

grpc::ServerUnaryReactor* SvdService::ReconstructBatch(grpc::CallbackServerContext* ctx,
                                                       const grpc::ByteBuffer* request_bytes,
                                                       grpc::ByteBuffer* response_bytes) {
  return budgeted<v1::ReconstructBatchRequest, v1::ReconstructBatchResponse>(
      ctx, "ReconstructBatch", request_bytes, response_bytes,
      [&](const UnaryCall& call, const Caller& caller, BudgetedUnaryReactor& reactor,
          const v1::ReconstructBatchRequest* request, v1::ReconstructBatchResponse* response) {
        check_accepting();
        const int count = request->items_size();
        if (count == 0) throw InvalidArgument("batch has no items");
        if (static_cast<uint32_t>(count) > context_.config.max_batch_items()) {
          throw InvalidArgument("batch has " + std::to_string(count) + " items; the limit is " +
                                std::to_string(context_.config.max_batch_items()) +
                                " (max_batch_items); split it or use ReconstructStream");
        }
        for (int i = 0; i < count; ++i) response->add_items();
        // Every item is checked (and its job made) before any runs, and the answer's size with
        // them: raw pixels are exactly their shape's size, so a batch that cannot fit in one
        // message is refused before anything is built. PNG and JPEG sizes are known only once
        // encoded: those are counted as they finish, and the batch stops at the limit.
        const uint64_t max_message_bytes = context_.config.max_message_bytes();
        auto too_large = std::make_shared<std::atomic<bool>>(false);
        auto answer_bytes = std::make_shared<std::atomic<uint64_t>>(0);
        std::vector<JobPtr> jobs(static_cast<std::size_t>(count));
        uint64_t raw_pixel_bytes = 0;
        uint64_t largest_item_bytes = 0;
        for (int i = 0; i < count; ++i) {
          const v1::ReconstructRequest& item = request->items(i);
          *answer_bytes += kBatchItemOverheadBytes + item.id().size();
          try {
            JobPtr job = make_reconstruct_job(ctx, item, "ReconstructBatch", caller);
            const uint64_t bytes = reconstruction_bytes(job->factors->shape(), job->format);
            largest_item_bytes = std::max(largest_item_bytes, bytes);
            if (!is_encoded(job->format)) {
              raw_pixel_bytes += bytes;
              *answer_bytes += bytes;
            }
            job->is_cancelled = [ctx, too_large] {
              return too_large->load() || ctx->IsCancelled();
            };
            jobs[static_cast<std::size_t>(i)] = std::move(job);
          } catch (...) {
            const grpc::Status status = to_status(std::current_exception());
            record_item("ReconstructBatch", status.error_code());
            fill_status(status, response->mutable_items(i)->mutable_status());
          }
        }
        if (*answer_bytes > max_message_bytes) {
          throw ResourceExhausted(
              "the answer to this batch of " + std::to_string(count) + " items would be " +
              std::to_string(answer_bytes->load()) + " bytes (items of up to " +
              std::to_string(largest_item_bytes) + " bytes of pixels), over max_message_bytes (" +
              std::to_string(max_message_bytes) +
              "); send fewer items per call, ask for PNG or JPEG, or use ReconstructStream (one "
              "message per item)");
        }
        // One count per item plus one for the submitting step, so the RPC cannot finish while still
        // submitting.
        auto remaining = std::make_shared<std::atomic<int>>(count + 1);
        auto item_done = [call, remaining, too_large, answer_bytes, max_message_bytes, count] {
          if (remaining->fetch_sub(1) != 1) return;
          if (!too_large->load()) {
            call.finish(grpc::Status::OK);
            return;
          }
          call.finish(grpc::Status(
              grpc::StatusCode::RESOURCE_EXHAUSTED,
              "the answer to this batch of " + std::to_string(count) + " items passed " +
                  std::to_string(max_message_bytes) +
                  " bytes (max_message_bytes) as its PNG and JPEG answers were encoded; send fewer "
                  "items per call or use ReconstructStream (one message per item)"));
        };
        auto pending = std::make_shared<std::vector<JobPtr>>(std::move(jobs));
        for (int i = 0; i < count; ++i) {
          JobPtr& job = (*pending)[static_cast<std::size_t>(i)];
          v1::ReconstructStreamResponse* slot = response->mutable_items(i);
          if (!job) {
            item_done();  // refused above; its status is in the answer
            continue;
          }
          const bool encoded = is_encoded(job->format);
          job->on_done = [this, slot, item_done, encoded, too_large, answer_bytes,
                          max_message_bytes](Job& done, std::exception_ptr error) {
            record_item("ReconstructBatch", to_status(error).error_code());
            if (!error && encoded &&
                answer_bytes->fetch_add(done.pixels.size()) + done.pixels.size() >
                    max_message_bytes) {
              too_large->store(true);  // the items not yet computed stop at their next stage
            }
            fill_status(to_status(error), slot->mutable_status());
            if (!error && !too_large->load()) fill_reconstruction(done, slot->mutable_result());
            item_done();
          };
        }
        // The pixels are held twice until sent: in the response message and in gRPC's serialized
        // copy of it. PNG and JPEG answers are reserved at their raw size, about their largest.
        uint64_t reserved_bytes = raw_pixel_bytes;
        for (const JobPtr& job : *pending) {
          if (job && is_encoded(job->format)) {
            reserved_bytes += reconstruction_bytes(job->factors->shape(), job->format);
          }
        }
        reactor.start_after_reserving(kSerializedCopies * reserved_bytes, call,
                                      [this, pending, item_done] {
                                        for (JobPtr& job : *pending) {
                                          if (job) context_.pipeline.submit(std::move(job));
                                        }
                                        item_done();
                                      });
      });
}

grpc::ServerUnaryReactor* SvdService::Compress(grpc::CallbackServerContext* ctx,
                                               const grpc::ByteBuffer* request_bytes,
                                               grpc::ByteBuffer* response_bytes) {
  return unary<v1::CompressRequest, v1::CompressResponse>(
      ctx, "Compress", request_bytes, response_bytes,
      [&](const UnaryCall& call, const Caller& caller, const v1::CompressRequest* request,
          v1::CompressResponse* response) {
        audit(*ctx, caller, "Compress");
        check_accepting();
        const OutputFormat format = output_format_of(request->format());
        const uint32_t jpeg_quality = jpeg_quality_of(request->jpeg_quality());
        check_has_image(request->image());
        JobPtr job = make_job(ctx, JobKind::compress, "Compress");
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
                                               const grpc::ByteBuffer* request_bytes,
                                               grpc::ByteBuffer* response_bytes) {
  return answer<v1::GetImageRequest, v1::GetImageResponse>(
      ctx, "GetImage", request_bytes, response_bytes,
      [&](const Caller& caller, const v1::GetImageRequest* request,
          v1::GetImageResponse* response) {
        check_image_id(request->id());
        const std::string stored_id = caller.images.stored_id(request->id());
        auto info = context_.store.info(stored_id);
        std::shared_ptr<const Factors> factors;
        // Another replica may have written it to a shared repository; its spectra need it loaded.
        if ((!info && context_.cache.has_repository()) ||
            (info && info->stored && !info->resident && request->include_singular_values())) {
          try {
            factors = context_.cache.find(stored_id);
          } catch (const NotFound&) {
          } catch (const Error&) {
            // The repository cannot answer: what this server knows is still an answer.
            if (!info) {
              std::rethrow_exception(
                  caller.images.in_client_terms(std::current_exception(), request->id()));
            }
          }
          info = context_.store.info(stored_id);
        }
        if (!info) throw NotFound("no image with id " + quote_client_text(request->id()));
        fill_info(*info, response->mutable_info());
        response->mutable_info()->set_id(request->id());
        if (request->include_singular_values()) {
          if (!factors) factors = context_.store.peek(stored_id);
          if (factors) fill_spectra(*factors, response->mutable_singular_values());
        }
      });
}

grpc::ServerUnaryReactor* SvdService::ListImages(grpc::CallbackServerContext* ctx,
                                                 const grpc::ByteBuffer* request_bytes,
                                                 grpc::ByteBuffer* response_bytes) {
  return answer<v1::ListImagesRequest, v1::ListImagesResponse>(
      ctx, "ListImages", request_bytes, response_bytes,
      [&](const Caller& caller, const v1::ListImagesRequest* request,
          v1::ListImagesResponse* response) {
        const uint32_t asked = request->page_size();
        const std::size_t page_size = asked == 0 ? kDefaultPageSize : std::min(asked, kMaxPageSize);
        // A page token is the last id of a page, as its client saw it.
        const ImageNamespace& images = caller.images;
        const std::string after =
            request->page_token().empty() ? std::string() : images.stored_id(request->page_token());
        const StoredImagePage page = context_.store.list_page(after, page_size,
                                                              request->include_evicted(),
                                                              images.prefix());
        for (const auto& info : page.images) {
          v1::ImageInfo* out = response->add_images();
          fill_info(info, out);
          out->set_id(std::string(images.client_id(info.id)));
        }
        response->set_next_page_token(std::string(images.client_id(page.next_after)));
        response->set_bytes_resident(context_.store.bytes_resident());
        response->set_budget_bytes(context_.store.budget_bytes());
      });
}

grpc::ServerUnaryReactor* SvdService::DeleteImage(grpc::CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request_bytes,
                                                  grpc::ByteBuffer* response_bytes) {
  return answer<v1::DeleteImageRequest, v1::DeleteImageResponse>(
      ctx, "DeleteImage", request_bytes, response_bytes,
      [&](const Caller& caller, const v1::DeleteImageRequest* request,
          v1::DeleteImageResponse* response) {
        check_image_id(request->id());
        audit(*ctx, caller, "DeleteImage", request->id());
        try {
          response->set_bytes_freed(context_.cache.erase(caller.images.stored_id(request->id())));
        } catch (...) {
          std::rethrow_exception(
              caller.images.in_client_terms(std::current_exception(), request->id()));
        }
      });
}

grpc::ServerUnaryReactor* SvdService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                    const grpc::ByteBuffer* request_bytes,
                                                    grpc::ByteBuffer* response_bytes) {
  return answer<v1::GetServerInfoRequest, v1::GetServerInfoResponse>(
      ctx, "GetServerInfo", request_bytes, response_bytes,
      [&](const Caller&, const v1::GetServerInfoRequest*, v1::GetServerInfoResponse* response) {
        const auto& c = context_.config;
        response->set_version(SVDSERVE_VERSION);
        response->set_backend(context_.backend.name());
        response->set_device(context_.backend.device_description());
        response->set_memory_budget_bytes(context_.store.budget_bytes());
        response->set_memory_used_bytes(context_.store.bytes_resident());
        response->set_listen_address(c.listen_address());
        response->set_started_unix_ms(context_.started_unix_ms);
        fill_devices(device_snapshots(context_.backend, context_.store),
                     response->mutable_devices());
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
                                               const grpc::ByteBuffer* request_bytes,
                                               grpc::ByteBuffer* response_bytes) {
  return answer<v1::GetStatsRequest, v1::GetStatsResponse>(
      ctx, "GetStats", request_bytes, response_bytes,
      [&](const Caller&, const v1::GetStatsRequest*, v1::GetStatsResponse* response) {
        context_.metrics.fill_stats(*response);
        const Pipeline& pipeline = context_.pipeline;
        response->set_decode_queue_depth(static_cast<uint32_t>(pipeline.decode_queue_depth()));
        response->set_compute_queue_depth(static_cast<uint32_t>(pipeline.compute_queue_depth()));
        response->set_images_resident(context_.store.images_resident());
        response->set_bytes_resident(context_.store.bytes_resident());
        response->set_evictions(context_.store.evictions());
        response->set_jobs_in_flight(static_cast<uint32_t>(pipeline.jobs_in_flight()));
        fill_devices(device_snapshots(context_.backend, context_.store),
                     response->mutable_devices());
      });
}

grpc::ServerUnaryReactor* SvdService::Echo(grpc::CallbackServerContext* ctx,
                                           const grpc::ByteBuffer* request_bytes,
                                           grpc::ByteBuffer* response_bytes) {
  return budgeted<v1::EchoRequest, v1::EchoResponse>(
      ctx, "Echo", request_bytes, response_bytes,
      [&](const UnaryCall& call, const Caller& caller, BudgetedUnaryReactor& reactor,
          const v1::EchoRequest* request, v1::EchoResponse* response) {
        audit(*ctx, caller, "Echo");
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
        reactor.start_after_reserving(
            kSerializedCopies * request->response_bytes(), call, [call, request, response] {
              // The payload back, cut or zero-padded to size: one allocation and one copy, like a
              // reconstruction's output.
              const auto size = static_cast<std::size_t>(request->response_bytes());
              std::string* payload = response->mutable_payload();
              payload->assign(request->payload(), 0, std::min(size, request->payload().size()));
              payload->resize(size, '\0');
              call.finish(grpc::Status::OK);
            });
      });
}

grpc::ServerUnaryReactor* SvdService::StartProfiling(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  return answer<v1::StartProfilingRequest, v1::StartProfilingResponse>(
      ctx, "StartProfiling", request_bytes, response_bytes,
      [&](const Caller& caller, const v1::StartProfilingRequest*, v1::StartProfilingResponse*) {
        audit(*ctx, caller, "StartProfiling");
        context_.backend.start_profiling();
        log().info("profiling capture started");
      });
}

grpc::ServerUnaryReactor* SvdService::StopProfiling(grpc::CallbackServerContext* ctx,
                                                    const grpc::ByteBuffer* request_bytes,
                                                    grpc::ByteBuffer* response_bytes) {
  return answer<v1::StopProfilingRequest, v1::StopProfilingResponse>(
      ctx, "StopProfiling", request_bytes, response_bytes,
      [&](const Caller& caller, const v1::StopProfilingRequest*, v1::StopProfilingResponse*) {
        audit(*ctx, caller, "StopProfiling");
        context_.backend.stop_profiling();
        log().info("profiling capture stopped");
      });
}

}  // namespace svdserve
