#include "server/grpc/service.hpp"

#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <chrono>

#include "kernels/errors.hpp"
#include "server/process/logging.hpp"
#include "server/grpc/reconstruct_response_encoder.hpp"
#include "server/grpc/status_mapping.hpp"

namespace svdserve {
namespace {

constexpr std::size_t kMaxIdLength = 256;
// Room Echo leaves below max_message_bytes for framing: the headroom a reconstruction's output
// keeps too (server.cpp), so any size a reconstruction can answer, Echo can.
constexpr uint64_t kEchoHeadroomBytes = 64 * 1024;

void check_image_id(const std::string& id) {
  if (id.size() > kMaxIdLength) {
    throw InvalidArgument("image id is longer than " + std::to_string(kMaxIdLength) + " bytes");
  }
  for (unsigned char c : id) {
    if (c < 0x20 || c == 0x7f) throw InvalidArgument("image id contains control characters");
  }
}

RankSelection rank_choice_of(uint32_t rank, double energy_fraction, bool has_energy) {
  RankSelection choice;
  if (has_energy) {
    if (!(energy_fraction > 0.0 && energy_fraction <= 1.0)) {
      throw InvalidArgument("energy_fraction must be in (0, 1], got " +
                            std::to_string(energy_fraction));
    }
    choice.energy_fraction = energy_fraction;
  } else {
    if (rank == 0) throw InvalidArgument("rank must be at least 1 (or give energy_fraction)");
    choice.rank = rank;
  }
  return choice;
}

v1::OutputFormat normalised(v1::OutputFormat format) {
  return format == v1::OUTPUT_FORMAT_UNSPECIFIED ? v1::OUTPUT_FORMAT_RAW_U8 : format;
}

void check_format(v1::OutputFormat format) {
  if (!v1::OutputFormat_IsValid(format)) {
    throw InvalidArgument("unknown output format " + std::to_string(format));
  }
}

void fill_spectra(const Factors& factors, google::protobuf::RepeatedPtrField<v1::Spectrum>* out) {
  for (const auto& channel : factors.all_singular_values()) {
    out->Add()->mutable_values()->Add(channel.begin(), channel.end());
  }
}

void fill_info(const StoredImageInfo& info, v1::ImageInfo* out) {
  out->set_id(info.id);
  fill_shape(info.shape, out->mutable_shape());
  out->set_rank_kept(info.rank_kept);
  out->set_bytes_resident(info.bytes);
  out->set_state(info.resident ? v1::IMAGE_STATE_RESIDENT : v1::IMAGE_STATE_EVICTED);
  out->set_created_unix_ms(info.created_unix_ms);
  out->set_last_used_unix_ms(info.last_used_unix_ms);
}

}  // namespace

void fill_shape(const ImageShape& shape, v1::Shape* out) {
  out->set_width(shape.width);
  out->set_height(shape.height);
  out->set_channels(shape.channels);
}

void fill_timings(const Job& job, v1::StageTimings* out) {
  out->set_queue_us(job.times.queue_us);
  out->set_decode_us(job.times.decode_us);
  out->set_compute_us(job.times.compute_us);
  out->set_encode_us(job.times.encode_us);
  out->set_total_us(std::chrono::duration<double, std::micro>(Clock::now() - job.arrived).count());
  out->set_batch_size(job.times.batch_size);
}

void fill_reconstruction_fields(const Job& job, v1::ReconstructResponse* out) {
  out->set_id(job.image_id);
  fill_shape(job.factors->shape(), out->mutable_shape());
  out->set_rank(job.rank);
  out->set_relative_error(job.relative_error);
  out->set_format(job.format);
  fill_timings(job, out->mutable_timings());
}

void fill_reconstruction(Job& job, v1::ReconstructResponse* out) {
  fill_reconstruction_fields(job, out);
  *out->mutable_pixels() = job.pixels.take_string();
}

v1::ReconstructRequest parse_reconstruct_request(const grpc::ByteBuffer& bytes) {
  v1::ReconstructRequest request;
  if (!bytes.Valid()) return request;  // no bytes: the empty message
  grpc::ByteBuffer shared(bytes);      // references the same slices; the reader wants it mutable
  grpc::ProtoBufferReader reader(&shared);
  if (!reader.status().ok() || !request.ParseFromZeroCopyStream(&reader)) {
    throw InvalidArgument("the request is not a valid svdserve.v1.ReconstructRequest "
                          "(malformed protobuf bytes)");
  }
  return request;
}

SvdService::SvdService(ServiceContext context) : context_(context) {}

SvdService::~SvdService() {
  std::lock_guard lock(directory_loads_mutex_);
  directory_loads_.clear();  // joins
}

void SvdService::finish(grpc::ServerUnaryReactor* reactor, const char* method,
                        const grpc::Status& status) {
  record(method, status);
  if (!status.ok()) {
    log().debug("call failed method={} code={} message=\"{}\"", method,
                code_name(status.error_code()), status.error_message());
  }
  reactor->Finish(status);
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

uint32_t SvdService::checked_max_rank(uint32_t requested) const {
  const uint32_t max_rank = requested == 0 ? context_.config.default_max_rank() : requested;
  if (max_rank > context_.config.max_rank()) {
    throw InvalidArgument("max_rank " + std::to_string(max_rank) +
                          " is above the server's limit of " +
                          std::to_string(context_.config.max_rank()));
  }
  return max_rank;
}

std::string SvdService::next_image_id() {
  return "img-" + std::to_string(next_id_.fetch_add(1));
}

JobPtr SvdService::make_reconstruct_job(grpc::CallbackServerContext* ctx,
                                        const v1::ReconstructRequest& request) {
  check_accepting();
  check_format(request.format());
  if (request.id().empty()) throw InvalidArgument("id is empty; say which image to reconstruct");
  JobPtr job = make_job(ctx, JobKind::reconstruct);
  job->image_id = request.id();
  job->rank_choice = rank_choice_of(request.rank(), request.energy_fraction(),
                                    request.rank_choice_case() ==
                                        v1::ReconstructRequest::kEnergyFraction);
  job->format = normalised(request.format());
  job->factors = context_.store.find(request.id());
  job->rank = resolve_rank(job->rank_choice, *job->factors);  // reject bad ranks before queueing
  return job;
}

grpc::ServerUnaryReactor* SvdService::Decompose(grpc::CallbackServerContext* ctx,
                                                const v1::DecomposeRequest* request,
                                                v1::DecomposeResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    check_accepting();
    const uint32_t max_rank = checked_max_rank(request->max_rank());
    check_image_id(request->id());
    if (request->image().source_case() == v1::ImageInput::SOURCE_NOT_SET) {
      throw InvalidArgument("request has no image: set image.encoded or image.raw");
    }
    JobPtr job = make_job(ctx, JobKind::decompose);
    job->input = &request->image();
    job->image_id = request->id().empty() ? next_image_id() : request->id();
    job->max_rank = max_rank;
    job->on_done = [this, reactor, response](Job& done, std::exception_ptr error) {
      if (error) return finish(reactor, "Decompose", to_status(error));
      response->set_id(done.image_id);
      fill_shape(done.factors->shape(), response->mutable_shape());
      response->set_rank_kept(done.factors->rank_kept());
      fill_spectra(*done.factors, response->mutable_singular_values());
      response->set_bytes_resident(done.factors->bytes_resident());
      fill_timings(done, response->mutable_timings());
      if (!done.evicted_ids.empty()) {
        log().info("evicted count={} to fit id={}", done.evicted_ids.size(), done.image_id);
      }
      finish(reactor, "Decompose", grpc::Status::OK);
    };
    context_.pipeline.submit(std::move(job));
  } catch (...) {
    finish(reactor, "Decompose", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::Reconstruct(grpc::CallbackServerContext* ctx,
                                                  const grpc::ByteBuffer* request,
                                                  grpc::ByteBuffer* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    JobPtr job = make_reconstruct_job(ctx, parse_reconstruct_request(*request));
    job->pixels_in_pool = true;
    job->on_done = [this, reactor, response](Job& done, std::exception_ptr error) {
      grpc::Status status = to_status(error);
      if (!error) {
        try {
          v1::ReconstructResponse fields;
          fill_reconstruction_fields(done, &fields);
          grpc::ByteBuffer encoded = encode_reconstruct_response(fields, std::move(done.pixels));
          response->Swap(&encoded);  // the call owns the pixels from here; freed after sending
        } catch (...) {
          status = to_status(std::current_exception());
        }
      }
      finish(reactor, "Reconstruct", status);
    };
    context_.pipeline.submit(std::move(job));
  } catch (...) {
    finish(reactor, "Reconstruct", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::ReconstructBatch(grpc::CallbackServerContext* ctx,
                                                       const v1::ReconstructBatchRequest* request,
                                                       v1::ReconstructBatchResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
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
    auto item_done = [this, reactor, remaining] {
      if (remaining->fetch_sub(1) == 1) finish(reactor, "ReconstructBatch", grpc::Status::OK);
    };
    for (int i = 0; i < count; ++i) {
      v1::ReconstructStreamResponse* slot = response->mutable_items(i);
      auto set_status = [slot](const grpc::Status& status) {
        slot->mutable_status()->set_code(status.error_code());
        slot->mutable_status()->set_message(status.error_message());
      };
      try {
        JobPtr job = make_reconstruct_job(ctx, request->items(i));
        job->on_done = [slot, set_status, item_done](Job& done, std::exception_ptr error) {
          set_status(to_status(error));
          if (!error) fill_reconstruction(done, slot->mutable_result());
          item_done();
        };
        context_.pipeline.submit(std::move(job));
      } catch (...) {
        set_status(to_status(std::current_exception()));
        item_done();
      }
    }
    item_done();
  } catch (...) {
    finish(reactor, "ReconstructBatch", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::Compress(grpc::CallbackServerContext* ctx,
                                               const v1::CompressRequest* request,
                                               v1::CompressResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    check_accepting();
    check_format(request->format());
    if (request->image().source_case() == v1::ImageInput::SOURCE_NOT_SET) {
      throw InvalidArgument("request has no image: set image.encoded or image.raw");
    }
    JobPtr job = make_job(ctx, JobKind::compress);
    job->input = &request->image();
    job->rank_choice = rank_choice_of(request->rank(), request->energy_fraction(),
                                      request->rank_choice_case() ==
                                          v1::CompressRequest::kEnergyFraction);
    if (job->rank_choice.rank > context_.config.max_rank()) {
      throw InvalidArgument("rank " + std::to_string(job->rank_choice.rank) +
                            " is above the server's max_rank of " +
                            std::to_string(context_.config.max_rank()));
    }
    job->format = normalised(request->format());
    job->on_done = [this, reactor, response](Job& done, std::exception_ptr error) {
      if (error) return finish(reactor, "Compress", to_status(error));
      fill_shape(done.factors->shape(), response->mutable_shape());
      response->set_rank(done.rank);
      response->set_relative_error(done.relative_error);
      response->set_format(done.format);
      *response->mutable_pixels() = done.pixels.take_string();
      fill_timings(done, response->mutable_timings());
      finish(reactor, "Compress", grpc::Status::OK);
    };
    context_.pipeline.submit(std::move(job));
  } catch (...) {
    finish(reactor, "Compress", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::GetImage(grpc::CallbackServerContext* ctx,
                                               const v1::GetImageRequest* request,
                                               v1::GetImageResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    const auto info = context_.store.info(request->id());
    if (!info) throw NotFound("no image with id '" + request->id() + "'");
    fill_info(*info, response->mutable_info());
    if (request->include_singular_values()) {
      if (auto factors = context_.store.peek(request->id())) {
        fill_spectra(*factors, response->mutable_singular_values());
      }
    }
    finish(reactor, "GetImage", grpc::Status::OK);
  } catch (...) {
    finish(reactor, "GetImage", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::ListImages(grpc::CallbackServerContext* ctx,
                                                 const v1::ListImagesRequest* request,
                                                 v1::ListImagesResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  for (const auto& info : context_.store.list(request->include_evicted())) {
    fill_info(info, response->add_images());
  }
  response->set_bytes_resident(context_.store.bytes_resident());
  response->set_budget_bytes(context_.store.budget_bytes());
  finish(reactor, "ListImages", grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::DeleteImage(grpc::CallbackServerContext* ctx,
                                                  const v1::DeleteImageRequest* request,
                                                  v1::DeleteImageResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    response->set_bytes_freed(context_.store.erase(request->id()));
    finish(reactor, "DeleteImage", grpc::Status::OK);
  } catch (...) {
    finish(reactor, "DeleteImage", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::GetServerInfo(grpc::CallbackServerContext* ctx,
                                                    const v1::GetServerInfoRequest*,
                                                    v1::GetServerInfoResponse* response) {
  auto* reactor = ctx->DefaultReactor();
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
  finish(reactor, "GetServerInfo", grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::GetStats(grpc::CallbackServerContext* ctx,
                                               const v1::GetStatsRequest*,
                                               v1::GetStatsResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  context_.stats.fill(*response);
  response->set_decode_queue_depth(static_cast<uint32_t>(context_.pipeline.decode_queue_depth()));
  response->set_compute_queue_depth(static_cast<uint32_t>(context_.pipeline.compute_queue_depth()));
  response->set_images_resident(context_.store.images_resident());
  response->set_bytes_resident(context_.store.bytes_resident());
  response->set_evictions(context_.store.evictions());
  response->set_jobs_in_flight(static_cast<uint32_t>(context_.pipeline.jobs_in_flight()));
  finish(reactor, "GetStats", grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::Echo(grpc::CallbackServerContext* ctx,
                                           const v1::EchoRequest* request,
                                           v1::EchoResponse* response) {
  auto* reactor = ctx->DefaultReactor();
  try {
    check_accepting();
    const uint64_t max_message_bytes = context_.config.max_message_bytes();
    const uint64_t limit = max_message_bytes > kEchoHeadroomBytes ? max_message_bytes - kEchoHeadroomBytes : 0;
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
    finish(reactor, "Echo", grpc::Status::OK);
  } catch (...) {
    finish(reactor, "Echo", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::StartProfiling(grpc::CallbackServerContext* ctx,
                                                     const v1::StartProfilingRequest*,
                                                     v1::StartProfilingResponse*) {
  auto* reactor = ctx->DefaultReactor();
  try {
    context_.backend.start_profiling();
    log().info("profiling capture started");
    finish(reactor, "StartProfiling", grpc::Status::OK);
  } catch (...) {
    finish(reactor, "StartProfiling", to_status(std::current_exception()));
  }
  return reactor;
}

grpc::ServerUnaryReactor* SvdService::StopProfiling(grpc::CallbackServerContext* ctx,
                                                    const v1::StopProfilingRequest*,
                                                    v1::StopProfilingResponse*) {
  auto* reactor = ctx->DefaultReactor();
  try {
    context_.backend.stop_profiling();
    log().info("profiling capture stopped");
    finish(reactor, "StopProfiling", grpc::Status::OK);
  } catch (...) {
    finish(reactor, "StopProfiling", to_status(std::current_exception()));
  }
  return reactor;
}

}  // namespace svdserve
