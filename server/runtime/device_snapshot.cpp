#include "server/runtime/device_snapshot.hpp"

#include <numeric>

namespace svdserve {

double DeviceSnapshot::busy_seconds() const noexcept {
  return std::accumulate(metrics.stream_busy_seconds.begin(), metrics.stream_busy_seconds.end(),
                         0.0);
}

std::vector<DeviceSnapshot> device_snapshots(const Backend& backend, const FactorStore& store) {
  std::vector<DeviceInfo> infos = backend.devices();
  std::vector<BackendMetrics> metrics = backend.device_metrics();
  const std::vector<DeviceUsage> usage = store.device_usage();
  std::vector<DeviceSnapshot> snapshots(infos.size());
  for (std::size_t d = 0; d < infos.size(); ++d) {
    snapshots[d].info = std::move(infos[d]);
    if (d < metrics.size()) snapshots[d].metrics = std::move(metrics[d]);
    if (d < usage.size()) snapshots[d].usage = usage[d];
  }
  return snapshots;
}

}  // namespace svdserve
