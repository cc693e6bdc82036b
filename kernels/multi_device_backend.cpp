#include "kernels/multi_device_backend.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace svdserve {

struct MultiDeviceBackend::DeviceLoad {
  std::atomic<std::size_t> placed_bytes{0};  // factors of live images on the device
  std::atomic<unsigned> running{0};          // calls on the device now
  std::atomic<bool> in_service{true};
};

namespace {

constexpr std::size_t kNoDevice = std::numeric_limits<std::size_t>::max();

// Factors of one device, wrapped to say which: the device's own backend made `inner`. Counts
// their bytes as placed on the device while they live.
class PlacedFactors final : public Factors {
 public:
  PlacedFactors(std::size_t device, std::shared_ptr<const Factors> inner,
                std::shared_ptr<MultiDeviceBackend::DeviceLoad> load)
      : Factors(inner->shape(), inner->rank_kept(), inner->all_singular_values(), inner->energy()),
        device_(device),
        inner_(std::move(inner)),
        load_(std::move(load)) {
    load_->placed_bytes += inner_->bytes_resident();
  }
  ~PlacedFactors() override { load_->placed_bytes -= inner_->bytes_resident(); }

  [[nodiscard]] std::size_t bytes_resident() const noexcept override {
    return inner_->bytes_resident();
  }
  [[nodiscard]] std::size_t device() const noexcept override { return device_; }
  [[nodiscard]] const Factors& inner() const noexcept { return *inner_; }

 private:
  std::size_t device_;
  std::shared_ptr<const Factors> inner_;
  std::shared_ptr<MultiDeviceBackend::DeviceLoad> load_;
};

const PlacedFactors& placed_factors(const Factors& factors) {
  const auto* placed = dynamic_cast<const PlacedFactors*>(&factors);
  if (placed == nullptr) throw InternalError("factors that the multi-device backend did not make");
  return *placed;
}

// Counts a call as running on its device for as long as it lives.
class Running {
 public:
  explicit Running(std::atomic<unsigned>& running) : running_(running) { ++running_; }
  ~Running() { --running_; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  std::atomic<unsigned>& running_;
};

// Collects the completions of a batch split over devices: `done` once, after the last part, with
// the first error.
struct SplitCompletion {
  explicit SplitCompletion(std::size_t parts, Backend::Completion completion)
      : remaining(parts), done(std::move(completion)) {}
  void finish(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex);
      if (error && !first_error) first_error = error;
      if (--remaining > 0) return;
    }
    done(first_error);
  }
  std::mutex mutex;
  std::size_t remaining;  // guarded by mutex
  std::exception_ptr first_error;  // guarded by mutex
  Backend::Completion done;
};

}  // namespace

MultiDeviceBackend::MultiDeviceBackend(std::vector<std::unique_ptr<Backend>> devices)
    : devices_(std::move(devices)) {
  if (devices_.empty()) throw InvalidArgument("a multi-device backend needs at least one device");
  name_ = devices_.front()->name();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    loads_.push_back(std::make_shared<DeviceLoad>());
    const DeviceInfo info = devices_[i]->devices().front();
    ordinals_.push_back(info.ordinal);
    budgets_.push_back(std::max<std::size_t>(1, info.default_memory_budget_bytes));
  }
}

// The devices go first, last one first: each finishes its posted batches, whose completions use
// loads_, the names and the failure handler, and may ask about the devices still there.
MultiDeviceBackend::~MultiDeviceBackend() {
  closing_ = true;  // a failure reported now probes no device: some are gone
  while (!devices_.empty()) devices_.pop_back();
}

std::string MultiDeviceBackend::name() const { return name_; }

std::string MultiDeviceBackend::device_description() const {
  const std::vector<DeviceInfo> infos = devices();
  const auto described = [](const DeviceInfo& info) {
    return info.in_service ? info.description : info.description + " [out of service]";
  };
  if (infos.size() == 1) return described(infos.front());
  std::string description = std::to_string(infos.size()) + " devices";
  for (const DeviceInfo& info : infos) {
    description += "; " + std::to_string(info.ordinal) + ": " + described(info);
  }
  return description;
}

std::size_t MultiDeviceBackend::default_memory_budget_bytes() const {
  std::size_t total = 0;
  for (const auto& device : devices_) total += device->default_memory_budget_bytes();
  return total;
}

bool MultiDeviceBackend::decodes_jpeg(const JpegHeader& header) const {
  return devices_.front()->decodes_jpeg(header);
}

double MultiDeviceBackend::decompose_seconds_estimate(const ImageShape& shape,
                                                      uint32_t rank) const {
  return devices_.front()->decompose_seconds_estimate(shape, rank);
}

// Fullest last, in steps of a sixteenth of the budget, so that memory evens out between devices
// whatever their sizes; within a step, fewest calls running, so that a burst spreads at once.
std::size_t MultiDeviceBackend::choose_device(std::size_t excluded) const {
  constexpr std::size_t kFullnessSteps = 16;
  std::size_t best = kNoDevice;
  std::tuple<std::size_t, unsigned, std::size_t> best_load{};
  for (std::size_t d = 0; d < loads_.size(); ++d) {
    if (d == excluded || !loads_[d]->in_service.load()) continue;
    const std::size_t placed = loads_[d]->placed_bytes.load();
    const std::tuple<std::size_t, unsigned, std::size_t> load{
        placed * kFullnessSteps / budgets_[d], loads_[d]->running.load(), placed};
    if (best == kNoDevice || load < best_load) {
      best = d;
      best_load = load;
    }
  }
  if (best == kNoDevice) {
    throw Unavailable("no " + name() + " device is in service: every one failed; the server "
                      "must be restarted");
  }
  return best;
}

std::size_t MultiDeviceBackend::first_in_service() const {
  for (std::size_t d = 0; d < loads_.size(); ++d) {
    if (loads_[d]->in_service.load()) return d;
  }
  return choose_device(kNoDevice);  // throws: none is
}

void MultiDeviceBackend::check_in_service(std::size_t device) const {
  if (!loads_[device]->in_service.load()) {
    throw Unavailable(name() + " device " + std::to_string(ordinals_[device]) +
                      " failed and is out of service; retry: images the repository holds "
                      "reload onto the other devices");
  }
}

template <typename Call>
decltype(auto) MultiDeviceBackend::on(std::size_t device, Call&& call) {
  check_in_service(device);
  Running running(loads_[device]->running);
  try {
    return call(*devices_[device]);
  } catch (const DeviceFailure& failure) {
    take_out_of_service(device, failure.what());
  }
  check_in_service(device);  // throws: it is out of service now
  throw InternalError("unreachable");
}

template <typename Call>
decltype(auto) MultiDeviceBackend::placed(Call&& call) {
  const std::size_t first = choose_device(kNoDevice);
  try {
    return on(first, [&](Backend& backend) { return call(backend, first); });
  } catch (const Unavailable&) {
    if (loads_[first]->in_service.load()) throw;  // not a failed device: the call's own answer
  }
  const std::size_t second = choose_device(first);
  return on(second, [&](Backend& backend) { return call(backend, second); });
}

std::shared_ptr<const Factors> MultiDeviceBackend::wrap(
    std::size_t device, std::shared_ptr<const Factors> factors) const {
  if (factors == nullptr) return nullptr;  // a stopped image
  return std::make_shared<PlacedFactors>(device, std::move(factors), loads_[device]);
}

std::vector<std::shared_ptr<const Factors>> MultiDeviceBackend::decompose(
    std::span<const DecodedImage* const> images, uint32_t max_rank, const StopCheck& stop) {
  return placed([&](Backend& backend, std::size_t device) {
    std::vector<std::shared_ptr<const Factors>> factors = backend.decompose(images, max_rank, stop);
    for (auto& one : factors) one = wrap(device, std::move(one));
    return factors;
  });
}

std::shared_ptr<const Factors> MultiDeviceBackend::from_host(const HostFactors& factors) {
  return placed([&](Backend& backend, std::size_t device) {
    return wrap(device, backend.from_host(factors));
  });
}

HostFactors MultiDeviceBackend::to_host(const Factors& factors) {
  const PlacedFactors& placed = placed_factors(factors);
  return on(placed.device(), [&](Backend& backend) { return backend.to_host(placed.inner()); });
}

void MultiDeviceBackend::reconstruct(std::span<const ReconstructItem> items) {
  reconstruct_and_wait(items);
}

void MultiDeviceBackend::reconstruct_async(std::vector<ReconstructItem> items, Completion done) {
  std::map<std::size_t, std::vector<ReconstructItem>> parts;  // by device, items in order
  try {
    for (const ReconstructItem& item : items) {
      const PlacedFactors& placed = placed_factors(*item.factors);
      ReconstructItem inner = item;
      inner.factors = &placed.inner();
      parts[placed.device()].push_back(inner);
    }
  } catch (...) {
    return done(std::current_exception());
  }
  if (parts.size() <= 1) {
    if (parts.empty()) return done(nullptr);
    auto& [device, part] = *parts.begin();
    return reconstruct_on(device, std::move(part), std::move(done));
  }
  auto split = std::make_shared<SplitCompletion>(parts.size(), std::move(done));
  for (auto& [device, part] : parts) {
    reconstruct_on(device, std::move(part),
                   [split](std::exception_ptr error) { split->finish(error); });
  }
}

void MultiDeviceBackend::reconstruct_on(std::size_t device, std::vector<ReconstructItem> items,
                                        Completion done) {
  try {
    check_in_service(device);
  } catch (...) {
    return done(std::current_exception());
  }
  const std::shared_ptr<DeviceLoad> load = loads_[device];
  auto finish = std::make_shared<Completion>(std::move(done));
  ++load->running;
  const auto completed = [this, device, load, finish](std::exception_ptr error) {
    --load->running;
    (*finish)(error ? for_clients(device, error) : nullptr);
  };
  try {
    devices_[device]->reconstruct_async(std::move(items), completed);
  } catch (...) {  // it threw before taking the batch (out of memory): nothing was enqueued
    completed(std::current_exception());
  }
}

std::exception_ptr MultiDeviceBackend::for_clients(std::size_t device, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const DeviceFailure& failure) {
    take_out_of_service(device, failure.what());
    try {
      check_in_service(device);
    } catch (...) {
      return std::current_exception();
    }
  } catch (...) {
  }
  return error;
}

HostMemory MultiDeviceBackend::allocate_output_memory(std::size_t bytes) {
  return on(first_in_service(),
            [&](Backend& backend) { return backend.allocate_output_memory(bytes); });
}

BackendMetrics MultiDeviceBackend::metrics() const {
  BackendMetrics total;
  total.svd_identity_error_range[0] = std::numeric_limits<double>::infinity();
  for (const BackendMetrics& device : device_metrics()) {
    total.device_memory_used_bytes += device.device_memory_used_bytes;
    total.device_memory_total_bytes += device.device_memory_total_bytes;
    total.stream_busy_seconds.insert(total.stream_busy_seconds.end(),
                                     device.stream_busy_seconds.begin(),
                                     device.stream_busy_seconds.end());
    total.calls_running += device.calls_running;
    total.svd_matrices += device.svd_matrices;
    total.svd_matrices_redone += device.svd_matrices_redone;
    if (device.svd_matrices > 0) {
      total.svd_identity_error_range[0] =
          std::min(total.svd_identity_error_range[0], device.svd_identity_error_range[0]);
      total.svd_identity_error_range[1] =
          std::max(total.svd_identity_error_range[1], device.svd_identity_error_range[1]);
    }
  }
  if (total.svd_matrices == 0) total.svd_identity_error_range[0] = 0;
  return total;
}

std::vector<DeviceInfo> MultiDeviceBackend::devices() const {
  std::vector<DeviceInfo> infos;
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    DeviceInfo info = devices_[d]->devices().front();
    info.in_service = loads_[d]->in_service.load();
    infos.push_back(std::move(info));
  }
  return infos;
}

std::vector<BackendMetrics> MultiDeviceBackend::device_metrics() const {
  std::vector<BackendMetrics> metrics;
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    metrics.push_back(devices_[d]->metrics());
    metrics.back().calls_running = loads_[d]->running.load();
  }
  return metrics;
}

std::vector<std::size_t> MultiDeviceBackend::placed_bytes() const {
  std::vector<std::size_t> bytes;
  for (const auto& load : loads_) bytes.push_back(load->placed_bytes.load());
  return bytes;
}

void MultiDeviceBackend::on_device_failure(DeviceFailureHandler handler) {
  std::lock_guard lock(handler_mutex_);
  failure_handler_ = std::move(handler);
}

void MultiDeviceBackend::take_out_of_service(std::size_t device, const std::string& reason) {
  if (device >= loads_.size()) throw InvalidArgument("no device " + std::to_string(device));
  if (!loads_[device]->in_service.exchange(false)) return;  // already out
  notify_failure(device, reason);
  if (closing_.load()) return;
  // A lost context may take the process's others with it (the CUDA driver says a sticky error
  // leaves the process unusable; on H200 hosts it does): the devices that no longer run a copy go
  // too, so that work is not placed where it can only fail.
  for (std::size_t other = 0; other < loads_.size(); ++other) {
    if (!loads_[other]->in_service.load() || devices_[other]->responds()) continue;
    if (!loads_[other]->in_service.exchange(false)) continue;
    notify_failure(other, "stopped responding after device " + std::to_string(ordinals_[device]) +
                              " failed: " + reason);
  }
}

void MultiDeviceBackend::notify_failure(std::size_t device, const std::string& reason) {
  DeviceFailureHandler handler;
  {
    std::lock_guard lock(handler_mutex_);
    handler = failure_handler_;
  }
  if (!handler) return;
  // It runs on the thread that met the failure (a completion thread among them): nothing of it
  // may escape there.
  try {
    handler(device, reason);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "svdserve: the device failure handler threw: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "svdserve: the device failure handler threw\n");
  }
}

void MultiDeviceBackend::start_profiling() {
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    if (loads_[d]->in_service.load()) devices_[d]->start_profiling();
  }
}

void MultiDeviceBackend::stop_profiling() {
  for (std::size_t d = 0; d < devices_.size(); ++d) {
    if (loads_[d]->in_service.load()) devices_[d]->stop_profiling();
  }
}

}  // namespace svdserve
