#pragma once
// What each device of the backend is and holds now, for GetServerInfo, GetStats and /metrics.

#include <vector>

#include "kernels/backend.hpp"
#include "server/runtime/factor_store.hpp"

namespace svdserve {

struct DeviceSnapshot {
  DeviceInfo info;
  BackendMetrics metrics;
  DeviceUsage usage;  // what the store holds on it
  [[nodiscard]] double busy_seconds() const noexcept;  // over its streams
};

// In Factors::device() order.
[[nodiscard]] std::vector<DeviceSnapshot> device_snapshots(const Backend& backend,
                                                           const FactorStore& store);

}  // namespace svdserve
