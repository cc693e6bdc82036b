#pragma once
// Runtime results into response messages, shared by the unary and the streaming handlers.

#include <grpcpp/support/status.h>

#include <google/protobuf/repeated_ptr_field.h>

#include "kernels/factors.hpp"
#include "server/runtime/device_snapshot.hpp"
#include "server/runtime/factor_store.hpp"
#include "server/runtime/job.hpp"
#include "svdserve/v1/svdserve.pb.h"

namespace svdserve {

void fill_shape(const ImageShape& shape, v1::Shape* out);
// The job's stage times; total_us is measured now, as the answer leaves.
void fill_timings(const Job& job, v1::StageTimings* out);
void fill_spectra(const Factors& factors, google::protobuf::RepeatedPtrField<v1::Spectrum>* out);
void fill_info(const StoredImageInfo& info, v1::ImageInfo* out);
void fill_devices(const std::vector<DeviceSnapshot>& devices,
                  google::protobuf::RepeatedPtrField<v1::DeviceStatus>* out);
// A per-item status (ReconstructBatch, ReconstructStream, LoadDirectory).
void fill_status(const grpc::Status& status, v1::ItemStatus* out);
// Every field of a reconstruction but the pixels.
void fill_reconstruction_fields(const Job& job, v1::ReconstructResponse* out);
// Every field, the pixels taken from the job.
void fill_reconstruction(Job& job, v1::ReconstructResponse* out);

}  // namespace svdserve
