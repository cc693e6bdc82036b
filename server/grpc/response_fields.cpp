#include "server/grpc/response_fields.hpp"

#include <chrono>

#include "server/grpc/request_translation.hpp"

namespace svdserve {

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
  out->set_state(info.resident ? v1::IMAGE_STATE_RESIDENT
                 : info.stored ? v1::IMAGE_STATE_STORED
                               : v1::IMAGE_STATE_EVICTED);
  out->set_stored(info.stored);
  out->set_device(static_cast<uint32_t>(info.device));
  out->set_created_unix_ms(info.created_unix_ms);
  out->set_last_used_unix_ms(info.last_used_unix_ms);
}

void fill_devices(const std::vector<DeviceSnapshot>& devices,
                  google::protobuf::RepeatedPtrField<v1::DeviceStatus>* out) {
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const DeviceSnapshot& device = devices[d];
    v1::DeviceStatus* status = out->Add();
    status->set_index(static_cast<uint32_t>(d));
    status->set_ordinal(device.info.ordinal);
    status->set_description(device.info.description);
    status->set_in_service(device.info.in_service);
    status->set_memory_budget_bytes(device.usage.budget_bytes);
    status->set_memory_used_bytes(device.usage.bytes);
    status->set_images_resident(device.usage.images);
    status->set_calls_running(device.metrics.calls_running);
    status->set_busy_seconds(device.busy_seconds());
    status->set_numa_node(device.info.numa_known ? static_cast<int32_t>(device.info.numa_node) : -1);
  }
}

void fill_status(const grpc::Status& status, v1::ItemStatus* out) {
  out->set_code(status.error_code());
  out->set_message(status.error_message());
}

void fill_reconstruction_fields(const Job& job, v1::ReconstructResponse* out) {
  out->set_id(job.image_id);
  fill_shape(job.factors->shape(), out->mutable_shape());
  out->set_rank(job.rank);
  out->set_relative_error(job.relative_error);
  out->set_format(to_proto(job.format));
  fill_timings(job, out->mutable_timings());
}

void fill_reconstruction(Job& job, v1::ReconstructResponse* out) {
  fill_reconstruction_fields(job, out);
  *out->mutable_pixels() = job.pixels.take_string();
}

}  // namespace svdserve
