// The real server on the GPU backend against the real server on the CPU backend, over gRPC, on
// every sample image: same shapes and ranks, singular values within 1e-4 of the largest, u8
// pixels within one grey level (identical on at least 99%). Skips without a CUDA device; CTest
// label "gpu".

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_paths.hpp"
#include "server_fixture.hpp"

#if SVDSERVE_HAVE_CUDA
#include "kernels/gpu/cuda_resources.hpp"
#endif

namespace svdserve::testing {
namespace {

bool gpu_present() {
#if SVDSERVE_HAVE_CUDA
  return gpu::cuda_device_available();
#else
  return false;
#endif
}

class GpuServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_present()) GTEST_SKIP() << "no CUDA device";
    v1::ServerConfig gpu_config = test_config();
    gpu_config.set_backend(v1::BACKEND_KIND_GPU);
    gpu_config.set_memory_budget_bytes(std::size_t{1} << 30);
    gpu_server_ = start(gpu_config);
    cpu_server_ = start(test_config());
    ClientOptions options;
    options.wait_for_ready = true;
    gpu_ = std::make_unique<Client>("127.0.0.1:" + std::to_string(gpu_server_->port()), options);
    cpu_ = std::make_unique<Client>("127.0.0.1:" + std::to_string(cpu_server_->port()), options);
  }

  static std::unique_ptr<Server> start(v1::ServerConfig config) {
    apply_defaults(config);
    validate(config);
    auto server = std::make_unique<Server>(config);
    server->set_serving(true);
    return server;
  }

  std::unique_ptr<Server> gpu_server_, cpu_server_;
  std::unique_ptr<Client> gpu_, cpu_;
};

TEST_F(GpuServerTest, AgreesWithTheCpuBackendOnEverySampleImage) {
  auto info = gpu_->server_info();
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->backend(), "gpu");
  std::size_t pixels = 0, differing = 0;
  for (const auto& entry : std::filesystem::directory_iterator(svdserve::test::test_images_dir())) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    const std::string bytes = read_file_bytes(entry.path().string());
    auto g = gpu_->decompose(bytes, 64, name);
    auto c = cpu_->decompose(bytes, 64, name);
    ASSERT_TRUE(g.ok()) << g.status().error_message();
    ASSERT_TRUE(c.ok()) << c.status().error_message();
    ASSERT_EQ(g->rank_kept(), c->rank_kept());
    ASSERT_EQ(g->singular_values_size(), c->singular_values_size());
    for (int ch = 0; ch < g->singular_values_size(); ++ch) {
      const auto& gs = g->singular_values(ch).values();
      const auto& cs = c->singular_values(ch).values();
      for (int k = 0; k < gs.size(); ++k) ASSERT_NEAR(gs[k], cs[k], 1e-4 * cs[0] + 1e-6);
    }
    for (uint32_t rank : {1u, 10u, 64u}) {
      auto gr = gpu_->reconstruct(name, Rank{rank});
      auto cr = cpu_->reconstruct(name, Rank{rank});
      ASSERT_TRUE(gr.ok() && cr.ok());
      // The errors come from sum(S^2) against ||A||^2: compare squares, to fp32 accuracy.
      const double g2 = gr->relative_error() * gr->relative_error();
      const double c2 = cr->relative_error() * cr->relative_error();
      EXPECT_NEAR(g2, c2, 5e-6 + 1e-3 * c2) << "rank " << rank;
      ASSERT_EQ(gr->pixels().size(), cr->pixels().size());
      for (std::size_t p = 0; p < gr->pixels().size(); ++p) {
        const int d = std::abs(int(uint8_t(gr->pixels()[p])) - int(uint8_t(cr->pixels()[p])));
        ASSERT_LE(d, 1) << "rank " << rank << " value " << p;
        differing += d != 0;
      }
      pixels += gr->pixels().size();
    }
  }
  const double fraction = static_cast<double>(differing) / pixels;
  RecordProperty("values_differing_by_one", std::to_string(fraction));
  std::printf("GPU vs CPU: %zu of %zu u8 values differ by one grey level (%.4f%%)\n", differing,
              pixels, 100.0 * fraction);
  EXPECT_LE(fraction, 0.01);
}

TEST_F(GpuServerTest, ProfilingWindowsOpenAndClose) {
  EXPECT_TRUE(gpu_->start_profiling().ok());
  EXPECT_TRUE(gpu_->stop_profiling().ok());
}

}  // namespace
}  // namespace svdserve::testing
