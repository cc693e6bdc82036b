// The multi-device backend over real GPUs (label gpu; skips below two devices, must run with none
// skipped on a two-GPU host): decompose batches spread over the devices, each device's factor
// memory holds its own images, reconstructions match one GPU's pixel for pixel, and a device
// whose context is lost for real (a trapped kernel) is taken out of service while the other serves.
// Own binary: the last test poisons a device for the rest of its process.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <set>
#include <span>
#include <vector>

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
    const ImageF32 image = test::random_image(kShape, seed);
    const ImageF32* images[] = {&image};
    return backend.decompose(std::span<const ImageF32* const>(images), kRank).front();
  }

  static std::vector<std::vector<std::byte>> reconstruct(
      Backend& backend, const std::vector<std::shared_ptr<const Factors>>& factors) {
    std::vector<std::vector<std::byte>> pixels(factors.size(),
                                               std::vector<std::byte>(kShape.values()));
    std::vector<ReconstructItem> items;
    for (std::size_t i = 0; i < factors.size(); ++i) {
      items.push_back({factors[i].get(), kRank - static_cast<uint32_t>(i % 4), OutputPixels::u8,
                       pixels[i]});
    }
    backend.reconstruct(items);
    return pixels;
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
  EXPECT_EQ(reconstruct(*backend_, sharded), reconstruct(*one, single))
      << "a batch split over two GPUs gives one GPU's bytes";
  // Copied out and loaded again, onto whichever device: the same pixels.
  std::vector<std::shared_ptr<const Factors>> reloaded;
  for (const auto& factors : sharded) reloaded.push_back(backend_->from_host(backend_->to_host(*factors)));
  EXPECT_EQ(reconstruct(*backend_, reloaded), reconstruct(*one, single));
}

// Last in this binary: device 1 stays broken for the rest of the process.
TEST_F(GpuMultiDeviceTest, ZZADeviceLostForRealIsTakenOutOfServiceAndTheOtherServes) {
  std::vector<std::shared_ptr<const Factors>> factors;
  for (uint64_t seed = 0; seed < 4; ++seed) factors.push_back(decompose(*backend_, seed));
  ASSERT_EQ(factors[1]->device(), 1u);
  ASSERT_EQ(testing::trap_on_device(1), cudaErrorLaunchFailure);

  EXPECT_THROW((void)reconstruct(*backend_, {factors[1]}), Unavailable);
  EXPECT_EQ(failed_, std::vector<std::size_t>{1});
  EXPECT_FALSE(backend_->devices()[1].in_service);
  // Device 0 reconstructs its images and takes every new one.
  EXPECT_NO_THROW((void)reconstruct(*backend_, {factors[0], factors[2]}));
  for (uint64_t seed = 10; seed < 14; ++seed) EXPECT_EQ(decompose(*backend_, seed)->device(), 0u);
  EXPECT_THROW((void)reconstruct(*backend_, {factors[3]}), Unavailable);
}

}  // namespace
}  // namespace svdserve
