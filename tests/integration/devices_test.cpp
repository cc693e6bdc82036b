// The devices a server computes on, over gRPC: GetServerInfo, GetStats, GetImage and /metrics say
// what each holds (the CPU backend: one device). On a host with two or more GPUs (label gpu;
// skipped below two): a default server shards images over every GPU and answers the pixels a
// one-GPU server answers; a GPU taken away loses no stored image; a GPU lost for real (a trapped
// kernel) is taken out of service with every other it takes with it, and the server says so.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>

#include "../client/temp_folder.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

#if SVDSERVE_HAVE_CUDA
#include "kernels/gpu/common/cuda_resources.hpp"
#include "tests/support/device_fault.hpp"
#endif

namespace svdserve::testing {
namespace {

// The largest difference between two answers' pixels (sizes must match).
int largest_difference(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return 256;
  int largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    largest = std::max(largest, std::abs(static_cast<int>(static_cast<unsigned char>(a[i])) -
                                         static_cast<int>(static_cast<unsigned char>(b[i]))));
  }
  return largest;
}

int gpu_count() {
#if SVDSERVE_HAVE_CUDA
  return gpu::cuda_device_count();
#else
  return 0;
#endif
}

using DevicesTest = ServerFixture;

TEST_F(DevicesTest, EveryDeviceIsListedWithWhatItHolds) {
  v1::ServerConfig config = test_config();
  config.set_metrics_port(static_cast<uint32_t>(free_port()));
  start(config);
  ASSERT_TRUE(client_->decompose(read_test_image("baboon.jpg"), 16, "a").ok());
  ASSERT_TRUE(client_->decompose(read_test_image("fruits.jpg"), 16, "b").ok());

  const auto info = client_->server_info();
  ASSERT_TRUE(info.ok()) << info.status().error_message();
  ASSERT_EQ(info->devices_size(), 1);
  const v1::DeviceStatus& cpu = info->devices(0);
  EXPECT_EQ(cpu.index(), 0u);
  EXPECT_EQ(cpu.ordinal(), 0);
  EXPECT_TRUE(cpu.in_service());
  EXPECT_EQ(cpu.images_resident(), 2u);
  EXPECT_EQ(cpu.memory_used_bytes(), info->memory_used_bytes());
  EXPECT_EQ(cpu.memory_budget_bytes(), info->memory_budget_bytes());
  EXPECT_EQ(cpu.description(), info->device());

  const auto stats = client_->stats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->devices_size(), 1);
  EXPECT_EQ(stats->devices(0).images_resident(), 2u);
  EXPECT_EQ(stats->devices(0).memory_used_bytes(), stats->bytes_resident());

  const auto image = client_->get_image("b");
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->info().device(), 0u);

  const std::string metrics = http_get(server_->metrics_port(), "/metrics");
  EXPECT_EQ(metric_sample(metrics, "svdserve_device_images_resident{device=\"0\"}"), 2);
  EXPECT_EQ(metric_sample(metrics, "svdserve_device_in_service{device=\"0\"}"), 1);
  EXPECT_EQ(metric_sample(metrics, "svdserve_device_bytes_resident{device=\"0\"}"),
            static_cast<double>(info->memory_used_bytes()));
  EXPECT_GT(metric_sample(metrics, "svdserve_device_memory_budget_bytes{device=\"0\"}"), 0);
}

// A GPU server as a user runs it, in this process: every device (gpu_devices "all"), a folder
// repository when `data_dir` is given.
class GpuDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() < 2) GTEST_SKIP() << "needs two CUDA devices, found " << gpu_count();
  }

  static std::unique_ptr<Server> start(const std::string& gpu_devices,
                                       const std::string& data_dir = {}) {
    v1::ServerConfig config = test_config();
    config.set_backend(v1::BACKEND_KIND_GPU);
    config.set_gpu_devices(gpu_devices);
    config.set_memory_budget_bytes(std::size_t{1} << 30);
    if (!data_dir.empty()) {
      config.set_durability(v1::DURABILITY_SYNC);
      config.set_data_dir(data_dir);
    }
    apply_defaults(config);
    validate(config);
    auto server = std::make_unique<Server>(config);
    server->set_serving(true);
    return server;
  }

  static std::unique_ptr<Client> connect(const Server& server) {
    ClientOptions options;
    options.wait_for_ready = true;
    return std::make_unique<Client>("127.0.0.1:" + std::to_string(server.port()), options);
  }

  // The sample photos under two ids each: enough images for every device to hold some.
  static std::map<std::string, std::string> photos() {
    std::map<std::string, std::string> by_id;
    for (const char* name : {"baboon.jpg", "fruits.jpg", "gradient.png", "pic1.png"}) {
      const std::string bytes = read_test_image(name);
      by_id[std::string(name) + "#1"] = bytes;
      by_id[std::string(name) + "#2"] = bytes;
    }
    return by_id;
  }

  static std::map<std::string, std::string> decompose_and_reconstruct(
      Client& client, const std::map<std::string, std::string>& images) {
    std::map<std::string, std::string> pixels;
    for (const auto& [id, bytes] : images) {
      const auto decomposed = client.decompose(bytes, 48, id);
      EXPECT_TRUE(decomposed.ok()) << id << ": " << decomposed.status().error_message();
    }
    for (const auto& [id, bytes] : images) {
      const auto answer = client.reconstruct(id, Rank{40});
      EXPECT_TRUE(answer.ok()) << id << ": " << answer.status().error_message();
      if (answer.ok()) pixels[id] = answer->pixels();
    }
    return pixels;
  }
};

TEST_F(GpuDevicesTest, ImagesSpreadOverEveryGpuAndAnswerOneGpusPixels) {
  const auto images = photos();
  std::map<std::string, std::string> one_gpu_pixels;
  {
    auto one = start("0");
    auto client = connect(*one);
    const auto info = client->server_info();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->devices_size(), 1);
    one_gpu_pixels = decompose_and_reconstruct(*client, images);
  }
  auto all = start("all");
  auto client = connect(*all);
  const auto info = client->server_info();
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->devices_size(), gpu_count());
  EXPECT_EQ(info->memory_budget_bytes(), static_cast<uint64_t>(gpu_count()) << 30)
      << "memory_budget_bytes is each device's";
  EXPECT_EQ(decompose_and_reconstruct(*client, images), one_gpu_pixels);

  std::set<uint32_t> devices;
  for (const auto& [id, bytes] : images) {
    const auto image = client->get_image(id);
    ASSERT_TRUE(image.ok());
    devices.insert(image->info().device());
  }
  EXPECT_GE(devices.size(), 2u) << "the images are on more than one GPU";
  const auto stats = client->stats();
  ASSERT_TRUE(stats.ok());
  uint64_t resident = 0;
  for (const v1::DeviceStatus& device : stats->devices()) {
    EXPECT_TRUE(device.in_service());
    EXPECT_GT(device.busy_seconds(), 0.0) << "device " << device.ordinal();
    resident += device.images_resident();
  }
  EXPECT_EQ(resident, images.size());
}

// A GPU taken out of the host (here: the server restarted without it, on the same repository)
// loses nothing: its images reload onto the GPUs left, within one level (the repository holds U,
// the GPU U·S: kernels/gpu/host_factors.hpp).
TEST_F(GpuDevicesTest, ImagesOfARemovedGpuReloadOntoTheOthersAfterARestart) {
  TempFolder data{"gpu_removed"};
  const auto images = photos();
  std::map<std::string, std::string> before;
  {
    auto server = start("all", data.path().string());
    auto client = connect(*server);
    before = decompose_and_reconstruct(*client, images);
  }
  auto server = start("0", data.path().string());
  auto client = connect(*server);
  for (const auto& [id, expected] : before) {
    const auto answer = client->reconstruct(id, Rank{40});
    ASSERT_TRUE(answer.ok()) << id << ": " << answer.status().error_message();
    EXPECT_LE(largest_difference(answer->pixels(), expected), 1) << id;
    EXPECT_EQ(client->get_image(id)->info().device(), 0u) << id;
  }
}

#if SVDSERVE_HAVE_CUDA
// Breaks device 1 (and, as the CUDA driver warns, maybe the process's other devices) for the rest
// of the process: ctest runs each test in its own, and .ci/device-check.sh runs this suite alone.
using GpuDeviceFailoverTest = GpuDevicesTest;

TEST_F(GpuDeviceFailoverTest, ALostGpuIsOutOfServiceAndTheServerSaysWhatItCanStillDo) {
  TempFolder data{"gpu_failover"};
  auto server = start("all", data.path().string());
  std::atomic<int> lost_calls{0};
  server->on_devices_lost([&] { ++lost_calls; });
  auto client = connect(*server);
  const auto images = photos();
  const auto before = decompose_and_reconstruct(*client, images);
  std::vector<std::string> on_lost;
  for (const auto& [id, bytes] : images) {
    if (client->get_image(id)->info().device() == 1) on_lost.push_back(id);
  }
  ASSERT_FALSE(on_lost.empty());

  ASSERT_EQ(svdserve::testing::trap_on_device(1), cudaErrorLaunchFailure);
  // The first call to meet the lost device fails, UNAVAILABLE, saying so without internals.
  const auto failed = client->reconstruct(on_lost.front(), Rank{40});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(failed.status().error_message().find("out of service"), std::string::npos)
      << failed.status().error_message();
  EXPECT_EQ(failed.status().error_message().find(".cu"), std::string::npos);

  const auto info = client->server_info();
  ASSERT_TRUE(info.ok());
  EXPECT_FALSE(info->devices(1).in_service());
  EXPECT_EQ(info->devices(1).images_resident(), 0u);
  bool any_in_service = false;
  for (const v1::DeviceStatus& device : info->devices()) any_in_service |= device.in_service();
  if (any_in_service) {
    // The others still compute: every image answers its pixels, the lost GPU's reloaded from
    // the repository onto them.
    EXPECT_EQ(lost_calls.load(), 0);
    for (const auto& [id, expected] : before) {
      const auto answer = client->reconstruct(id, Rank{40});
      ASSERT_TRUE(answer.ok()) << id << ": " << answer.status().error_message();
      EXPECT_LE(largest_difference(answer->pixels(), expected), 1) << id;
      EXPECT_NE(client->get_image(id)->info().device(), 1u) << id;
    }
  } else {
    // The driver lost the whole process's CUDA state: health says so, calls are UNAVAILABLE, and
    // the process is told to go (svdserve exits 5 for its supervisor to restart it).
    std::printf("every GPU of the process was lost with device 1\n");
    EXPECT_EQ(lost_calls.load(), 1);
    EXPECT_TRUE(server->devices_lost());
    EXPECT_EQ(client->health().value(), HealthStatus::not_serving);
    const auto after = client->reconstruct(before.begin()->first, Rank{40});
    EXPECT_EQ(after.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  }
}
#endif

}  // namespace
}  // namespace svdserve::testing
