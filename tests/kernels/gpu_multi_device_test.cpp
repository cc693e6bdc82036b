// The multi-device backend over real GPUs (label gpu; skips below two devices, must run with none
// skipped on a two-GPU host): decompose batches spread over the devices, each device's factor
// memory holds its own images, reconstructions match one GPU's pixel for pixel, and a device
// whose context is lost for real (a trapped kernel) is taken out of service, with every other
// that stops responding with it.
// Own binary: the last test poisons a device for the rest of its process.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <span>
#include <vector>

#include "backend_calls.hpp"
#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#include "kernels/multi_device_backend.hpp"
#include "test_images.hpp"
#include "tests/support/device_fault.hpp"

namespace svdserve {
namespace {

constexpr ImageShape kShape{256, 320, 3};
constexpr uint32_t kRank = 32;
constexpr std::size_t kBudget = std::size_t{512} << 20;

std::unique_ptr<Backend> gpu(int device) {
  return gpu::make_gpu_backend({.device = device, .budget_bytes = kBudget});
}

struct Difference {
  std::size_t differing = 0;
  std::size_t values = 0;
  int largest = 0;
};

Difference difference(const std::vector<std::vector<std::byte>>& a,
                      const std::vector<std::vector<std::byte>>& b) {
  Difference d;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t v = 0; v < a[i].size(); ++v, ++d.values) {
      const int gap = std::abs(static_cast<int>(a[i][v]) - static_cast<int>(b[i][v]));
      d.differing += gap != 0;
      d.largest = std::max(d.largest, gap);
    }
  }
  return d;
}

class GpuMultiDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::cuda_device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
    std::vector<std::unique_ptr<Backend>> devices;
    devices.push_back(gpu(0));
    devices.push_back(gpu(1));
    backend_ = std::make_unique<MultiDeviceBackend>(std::move(devices));
    backend_->on_device_failure(
        [this](std::size_t device, const std::string&) { failed_.push_back(device); });
  }

  static std::shared_ptr<const Factors> decompose(Backend& backend, uint64_t seed) {
    return test::decompose_one(backend, test::random_image(kShape, seed), kRank);
  }
  static std::vector<std::vector<std::byte>> reconstruct(
      Backend& backend, const std::vector<std::shared_ptr<const Factors>>& factors) {
    return test::reconstruct_all(backend, factors, kRank, 4);
  }

  std::unique_ptr<MultiDeviceBackend> backend_;
  std::vector<std::size_t> failed_;
};

TEST_F(GpuMultiDeviceTest, DecomposeBatchesSpreadAndEachDeviceHoldsItsOwn) {
  std::vector<std::shared_ptr<const Factors>> factors;
  for (uint64_t seed = 0; seed < 8; ++seed) factors.push_back(decompose(*backend_, seed));
  std::vector<std::size_t> per_device(2, 0);
  for (const auto& one : factors) ++per_device.at(one->device());
  EXPECT_EQ(per_device, (std::vector<std::size_t>{4, 4}));
  const std::vector<BackendMetrics> metrics = backend_->device_metrics();
  ASSERT_EQ(metrics.size(), 2u);
  for (const BackendMetrics& device : metrics) {
    EXPECT_EQ(device.device_memory_used_bytes, 4 * factors.front()->bytes_resident());
  }
  const std::vector<DeviceInfo> devices = backend_->devices();
  EXPECT_EQ(devices[0].ordinal, 0);
  EXPECT_EQ(devices[1].ordinal, 1);
  EXPECT_EQ(devices[0].default_memory_budget_bytes, kBudget);
}

// Each image reconstructs to one GPU's bytes. A batch split over GPUs runs as smaller batches,
// whose kernel may differ from the whole batch's on one GPU (the variant follows the batch):
// within one level there.
TEST_F(GpuMultiDeviceTest, ReconstructionsMatchOneGpuPixelForPixel) {
  auto one = gpu(0);
  std::vector<std::shared_ptr<const Factors>> sharded;
  std::vector<std::shared_ptr<const Factors>> single;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    sharded.push_back(decompose(*backend_, seed));
    single.push_back(decompose(*one, seed));
  }
  std::set<std::size_t> devices;
  for (const auto& factors : sharded) devices.insert(factors->device());
  ASSERT_EQ(devices.size(), 2u);
  for (std::size_t i = 0; i < sharded.size(); ++i) {
    EXPECT_EQ(reconstruct(*backend_, {sharded[i]}), reconstruct(*one, {single[i]}))
        << "image " << i << " on device " << sharded[i]->device();
  }
  const auto split = reconstruct(*backend_, sharded);
  const auto whole = reconstruct(*one, single);
  const Difference batch = difference(split, whole);
  std::printf("split vs whole batch: %zu of %zu values differ, by at most %d\n", batch.differing,
              batch.values, batch.largest);
  EXPECT_LE(batch.largest, 1);
  // Copied out and loaded again, onto whichever device: within one level (the host copy holds U,
  // the device U·S, so U·S is rounded once more: kernels/gpu/host_factors.hpp).
  for (std::size_t i = 0; i < sharded.size(); ++i) {
    const auto reloaded = backend_->from_host(backend_->to_host(*sharded[i]));
    EXPECT_LE(difference(reconstruct(*backend_, {reloaded}), reconstruct(*one, {single[i]})).largest,
              1)
        << i;
  }
}

// Last in this binary: the trapped kernel leaves device 1 (and, as the CUDA driver warns, maybe
// the process's other devices) unusable for the rest of the process.
TEST_F(GpuMultiDeviceTest, ZZADeviceLostForRealIsTakenOutOfService) {
  std::vector<std::shared_ptr<const Factors>> factors;
  for (uint64_t seed = 0; seed < 4; ++seed) factors.push_back(decompose(*backend_, seed));
  ASSERT_EQ(factors[1]->device(), 1u);
  ASSERT_EQ(testing::trap_on_device(1), cudaErrorLaunchFailure);

  EXPECT_THROW((void)reconstruct(*backend_, {factors[1]}), Unavailable);
  ASSERT_FALSE(failed_.empty());
  EXPECT_EQ(failed_.front(), 1u);
  const std::vector<DeviceInfo> devices = backend_->devices();
  EXPECT_FALSE(devices[1].in_service);
  // What stays in service works; what does not is never used.
  bool any_in_service = false;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    std::printf("device %zu after the trap: %s\n", d, devices[d].in_service ? "in service" : "out");
    any_in_service |= devices[d].in_service;
  }
  if (devices[0].in_service) {
    EXPECT_NO_THROW((void)reconstruct(*backend_, {factors[0], factors[2]}));
  } else {
    EXPECT_THROW((void)reconstruct(*backend_, {factors[0]}), Unavailable);
  }
  if (any_in_service) {
    EXPECT_TRUE(devices[decompose(*backend_, 10)->device()].in_service);
  } else {
    EXPECT_THROW((void)decompose(*backend_, 10), Unavailable);
  }
}

}  // namespace
}  // namespace svdserve
