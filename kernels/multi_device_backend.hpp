#pragma once
// One backend over several devices (the GPUs of a host), each its own backend with its own
// streams, factor memory and budget. Every image lives on one device: Decompose places a batch on
// the least loaded device in service (the emptiest by budget, then the fewest calls running), so
// batches spread over all of them; reconstructions of an image run on its device, a batch never spans
// devices (the batcher keys on Factors::device(), and a mixed batch is split here).
//
// A device that fails (DeviceFailure) is taken out of service: calls for its images fail with
// UNAVAILABLE, the failure handler lets the store drop them so that they reload from the
// repository onto the others, and placement skips it. A Decompose or a load that fails with its
// device is retried once on another. The other devices are then probed (Backend::responds): a
// sticky CUDA error may leave the whole process unusable, and those that no longer respond go
// out of service too; with none left, the server stops (server/process).

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace svdserve {

class MultiDeviceBackend final : public Backend {
 public:
  // At least one device; all of one kind (their name()), indexed in this order.
  explicit MultiDeviceBackend(std::vector<std::unique_ptr<Backend>> devices);
  ~MultiDeviceBackend() override;

  [[nodiscard]] std::string name() const override;
  [[nodiscard]] std::string device_description() const override;
  // The sum of the devices' budgets: each device has its own (devices()).
  [[nodiscard]] std::size_t default_memory_budget_bytes() const override;
  [[nodiscard]] bool decodes_jpeg(const JpegHeader& header) const override;
  [[nodiscard]] double decompose_seconds_estimate(const ImageShape& shape,
                                                  uint32_t rank) const override;

  using Backend::decompose;
  [[nodiscard]] std::vector<std::shared_ptr<const Factors>> decompose(
      std::span<const DecodedImage* const> images, uint32_t max_rank,
      const StopCheck& stop) override;
  void reconstruct(std::span<const ReconstructItem> items) override;
  void reconstruct_async(std::vector<ReconstructItem> items, Completion done) override;
  [[nodiscard]] HostFactors to_host(const Factors& factors) override;
  [[nodiscard]] std::shared_ptr<const Factors> from_host(const HostFactors& factors) override;
  [[nodiscard]] HostMemory allocate_output_memory(std::size_t bytes) override;

  [[nodiscard]] BackendMetrics metrics() const override;  // summed over the devices
  [[nodiscard]] std::vector<DeviceInfo> devices() const override;
  [[nodiscard]] std::vector<BackendMetrics> device_metrics() const override;
  void on_device_failure(DeviceFailureHandler handler) override;

  void start_profiling() override;
  void stop_profiling() override;

  // Takes a device out of service as a DeviceFailure would (also the hook tests use to simulate
  // one) and calls the failure handler with `reason`, once per device.
  void take_out_of_service(std::size_t device, const std::string& reason);
  // Factor bytes each device holds now, and calls running on it: what placement weighs.
  [[nodiscard]] std::vector<std::size_t> placed_bytes() const;

  struct DeviceLoad;  // per device: placed bytes, calls running, in service

 private:
  // A device in service for new work: the least loaded, skipping `excluded`; throws Unavailable
  // when none is left.
  [[nodiscard]] std::size_t choose_device(std::size_t excluded) const;
  [[nodiscard]] std::size_t first_in_service() const;
  void check_in_service(std::size_t device) const;
  // Runs `call` on `device` counted as running there; a DeviceFailure takes the device out of
  // service and becomes the Unavailable clients see.
  template <typename Call>
  decltype(auto) on(std::size_t device, Call&& call);
  // Runs `call(device)` on a chosen device, once more on another when the first fails.
  template <typename Call>
  decltype(auto) placed(Call&& call);
  void reconstruct_on(std::size_t device, std::vector<ReconstructItem> items, Completion done);
  // A DeviceFailure takes `device` out of service and becomes what clients see; others pass.
  [[nodiscard]] std::exception_ptr for_clients(std::size_t device, std::exception_ptr error);
  void notify_failure(std::size_t device, const std::string& reason);
  [[nodiscard]] std::shared_ptr<const Factors> wrap(std::size_t device,
                                                    std::shared_ptr<const Factors> factors) const;

  std::vector<std::unique_ptr<Backend>> devices_;
  std::vector<std::shared_ptr<DeviceLoad>> loads_;
  std::string name_;           // the devices' kind, "gpu"
  std::vector<int> ordinals_;  // each device's own (CUDA) ordinal, for messages
  std::vector<std::size_t> budgets_;  // each device's factor budget, for placement
  std::atomic<bool> closing_{false};  // the destructor has begun
  mutable std::mutex handler_mutex_;
  DeviceFailureHandler failure_handler_;  // guarded by handler_mutex_
};

}  // namespace svdserve
