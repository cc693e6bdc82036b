// The multi-device backend over real CPU backends, one per "device": placement spreads decompose
// batches, each image reconstructs on its own device with the pixels one backend gives, a mixed
// batch is split, and a failed device is taken out of service while the others keep serving.
// The same backend over GPUs: gpu_multi_device_test.cpp.
#include "kernels/multi_device_backend.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>

#include "backend_calls.hpp"
#include "kernels/errors.hpp"

namespace svdserve {
namespace {

constexpr ImageShape kShape{40, 56, 3};
constexpr uint32_t kRank = 10;

ImageF32 random_image(uint32_t seed) {
  ImageF32 image{.shape = kShape, .planes = std::vector<float>(kShape.values())};
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> sample(0.0f, 255.0f);
  for (float& value : image.planes) value = sample(random);
  return image;
}

// A CPU backend that fails as a lost GPU does, once armed: every call throws DeviceFailure.
class FailingDevice final : public Backend {
 public:
  FailingDevice() : inner_(make_cpu_backend({.threads = 1})) {}
  void arm() { armed_ = true; }

  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] std::string device_description() const override { return "failing"; }
  [[nodiscard]] double decompose_seconds_estimate(const ImageShape& shape,
                                                  uint32_t rank) const override {
    return inner_->decompose_seconds_estimate(shape, rank);
  }
  using Backend::decompose;
  std::vector<std::shared_ptr<const Factors>> decompose(std::span<const DecodedImage* const> images,
                                                        uint32_t max_rank,
                                                        const StopCheck& stop) override {
    fail_if_armed();
    return inner_->decompose(images, max_rank, stop);
  }
  void reconstruct(std::span<const ReconstructItem> items) override {
    fail_if_armed();
    inner_->reconstruct(items);
  }
  HostFactors to_host(const Factors& factors) override {
    fail_if_armed();
    return inner_->to_host(factors);
  }
  std::shared_ptr<const Factors> from_host(const HostFactors& factors) override {
    fail_if_armed();
    return inner_->from_host(factors);
  }
  // As a GPU whose context went with another's: no longer runs a copy once armed.
  [[nodiscard]] bool responds() noexcept override { return !armed_; }
  void start_profiling() override {}
  void stop_profiling() override {}

 private:
  void fail_if_armed() const {
    if (armed_) throw DeviceFailure("CUDA error cudaErrorIllegalAddress in a kernel at x.cu:1");
  }
  std::unique_ptr<Backend> inner_;
  std::atomic<bool> armed_{false};
};

class MultiDeviceBackendTest : public ::testing::Test {
 protected:
  // Three CPU devices; the last one can be made to fail.
  MultiDeviceBackendTest() {
    std::vector<std::unique_ptr<Backend>> devices;
    devices.push_back(make_cpu_backend({.threads = 1}));
    devices.push_back(make_cpu_backend({.threads = 1}));
    auto failing = std::make_unique<FailingDevice>();
    failing_ = failing.get();
    devices.push_back(std::move(failing));
    backend_ = std::make_unique<MultiDeviceBackend>(std::move(devices));
    backend_->on_device_failure([this](std::size_t device, const std::string& reason) {
      failed_.push_back(device);
      reasons_.push_back(reason);
    });
  }

  static std::shared_ptr<const Factors> decompose(Backend& backend, uint32_t seed) {
    return test::decompose_one(backend, random_image(seed), kRank);
  }
  static std::vector<std::vector<std::byte>> reconstruct(
      Backend& backend, const std::vector<std::shared_ptr<const Factors>>& factors) {
    return test::reconstruct_all(backend, factors, kRank, 3);
  }

  FailingDevice* failing_ = nullptr;
  std::unique_ptr<MultiDeviceBackend> backend_;
  std::vector<std::size_t> failed_;
  std::vector<std::string> reasons_;
};

TEST_F(MultiDeviceBackendTest, DecomposeBatchesSpreadOverTheDevicesByTheirBytes) {
  std::vector<std::shared_ptr<const Factors>> factors;
  for (uint32_t seed = 0; seed < 6; ++seed) factors.push_back(decompose(*backend_, seed));
  std::vector<std::size_t> per_device(3, 0);
  for (const auto& one : factors) ++per_device.at(one->device());
  EXPECT_EQ(per_device, (std::vector<std::size_t>{2, 2, 2}));
  const std::vector<std::size_t> placed = backend_->placed_bytes();
  EXPECT_EQ(placed[0], placed[1]);
  EXPECT_EQ(placed[1], placed[2]);
  EXPECT_EQ(placed[0], 2 * factors.front()->bytes_resident());
  factors.clear();
  EXPECT_EQ(backend_->placed_bytes(), (std::vector<std::size_t>{0, 0, 0}))
      << "bytes leave the device with the images";
}

TEST_F(MultiDeviceBackendTest, AMixedBatchGivesThePixelsOfOneBackend) {
  auto one = make_cpu_backend({.threads = 1});
  std::vector<std::shared_ptr<const Factors>> sharded;
  std::vector<std::shared_ptr<const Factors>> single;
  for (uint32_t seed = 0; seed < 7; ++seed) {
    sharded.push_back(decompose(*backend_, seed));
    single.push_back(decompose(*one, seed));
  }
  std::set<std::size_t> devices;
  for (const auto& factors : sharded) devices.insert(factors->device());
  ASSERT_EQ(devices.size(), 3u) << "the batch spans every device";
  EXPECT_EQ(reconstruct(*backend_, sharded), reconstruct(*one, single));
}

TEST_F(MultiDeviceBackendTest, AFailedDeviceIsOutOfServiceAndTheOthersServe) {
  std::vector<std::shared_ptr<const Factors>> factors;
  for (uint32_t seed = 0; seed < 3; ++seed) factors.push_back(decompose(*backend_, seed));
  ASSERT_EQ(factors[2]->device(), 2u);
  failing_->arm();

  // A batch with an image of the failed device fails as a whole, UNAVAILABLE, without internals.
  try {
    (void)reconstruct(*backend_, factors);
    FAIL() << "expected Unavailable";
  } catch (const Unavailable& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("failed and is out of service; retry"), std::string::npos)
        << message;
    EXPECT_EQ(message.find("x.cu"), std::string::npos) << message;
  }
  ASSERT_EQ(failed_, std::vector<std::size_t>{2});
  EXPECT_NE(reasons_.front().find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_FALSE(backend_->devices()[2].in_service);
  EXPECT_NE(backend_->device_description().find("[out of service]"), std::string::npos);

  // Images of the other devices reconstruct; new ones never land on the failed device.
  factors.pop_back();
  EXPECT_NO_THROW((void)reconstruct(*backend_, factors));
  for (uint32_t seed = 10; seed < 16; ++seed) EXPECT_NE(decompose(*backend_, seed)->device(), 2u);
  EXPECT_EQ(failed_.size(), 1u) << "the handler hears of each device once";
}

TEST_F(MultiDeviceBackendTest, ADecomposeOnADeviceThatFailsIsRetriedOnAnother) {
  failing_->arm();
  // a and b land on devices 0 and 1, so c is placed on the empty device 2 first.
  const auto a = decompose(*backend_, 1);
  const auto b = decompose(*backend_, 2);
  const auto c = decompose(*backend_, 3);
  EXPECT_NE(c->device(), 2u);
  EXPECT_EQ(failed_, std::vector<std::size_t>{2});
}

TEST_F(MultiDeviceBackendTest, FactorsCopiedOutLoadOntoADeviceInService) {
  const auto original = decompose(*backend_, 4);
  const HostFactors host = backend_->to_host(*original);
  backend_->take_out_of_service(original->device(), "test");
  const auto loaded = backend_->from_host(host);
  EXPECT_NE(loaded->device(), original->device());
  auto one = make_cpu_backend({.threads = 1});
  EXPECT_EQ(reconstruct(*backend_, {loaded}), reconstruct(*one, {one->from_host(host)}));
}

TEST_F(MultiDeviceBackendTest, WithEveryDeviceFailedCallsAreUnavailable) {
  for (std::size_t d = 0; d < 3; ++d) backend_->take_out_of_service(d, "test");
  EXPECT_THROW((void)decompose(*backend_, 1), Unavailable);
  EXPECT_THROW((void)backend_->allocate_output_memory(64), Unavailable);
}

TEST(MultiDeviceBackend, DevicesThatStopRespondingWithAFailedOneGoOutOfServiceToo) {
  std::vector<std::unique_ptr<Backend>> devices;
  auto first = std::make_unique<FailingDevice>();
  auto second = std::make_unique<FailingDevice>();
  FailingDevice& failing_first = *first;
  FailingDevice& failing_second = *second;
  devices.push_back(std::move(first));
  devices.push_back(std::move(second));
  devices.push_back(make_cpu_backend({.threads = 1}));
  MultiDeviceBackend backend(std::move(devices));
  std::vector<std::pair<std::size_t, std::string>> failed;
  backend.on_device_failure(
      [&](std::size_t device, const std::string& reason) { failed.emplace_back(device, reason); });
  failing_first.arm();
  failing_second.arm();  // the driver lost both
  const ImageF32 image = random_image(1);
  EXPECT_NE(test::decompose_one(backend, image, kRank)->device(), 0u) << "retried elsewhere";
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0].first, 0u);
  EXPECT_EQ(failed[1].first, 1u);
  EXPECT_NE(failed[1].second.find("stopped responding after device"), std::string::npos)
      << failed[1].second;
  const std::vector<DeviceInfo> infos = backend.devices();
  EXPECT_FALSE(infos[0].in_service);
  EXPECT_FALSE(infos[1].in_service);
  EXPECT_TRUE(infos[2].in_service) << "the one that still runs stays";
  EXPECT_EQ(test::decompose_one(backend, image, kRank)->device(), 2u);
}

TEST(MultiDeviceBackend, NeedsADevice) {
  EXPECT_THROW(MultiDeviceBackend({}), InvalidArgument);
}

}  // namespace
}  // namespace svdserve
