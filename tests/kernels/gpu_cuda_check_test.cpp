// The CUDA check macros (kernels/gpu/common/cuda_check.hpp) clear the thread's last error when
// they throw, as RMM_CUDA_TRY does. A refused page-locked allocation is not fatal: the host
// buffer pool answers it with ordinary memory and the request goes on, so the error it leaves
// behind must not fail the next launch check, or the next batch, on the same thread.
// Skips in SetUp without a CUDA device (CTest label gpu).

#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/gpu_backend.hpp"
#include "kernels/gpu/svd/randomized_svd_kernels.hpp"
#include "kernels/pixel_rounding.hpp"
#include "test_images.hpp"

namespace svdserve::test {
namespace {

// No host pins and no device holds a pebibyte: the allocation is refused at once.
constexpr std::size_t kAbsurdBytes = std::size_t{1} << 50;

class GpuCudaCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaGetLastError(), cudaSuccess) << "an earlier test left an error behind";
  }
};

// A real launch behind SVDSERVE_CUDA_CHECK_LAUNCH: the Gaussian sketch of the randomized SVD,
// checked by its mean and variance.
void expect_gaussian_launch_succeeds() {
  constexpr std::size_t kValues = 1 << 16;
  constexpr uint64_t kSeed = 42;
  const gpu::Stream stream;
  const gpu::DeviceBuffer values(kValues * sizeof(float));
  ASSERT_NO_THROW(gpu::rsvd::fill_gaussian(values.as<float>(), kValues, kSeed, stream.view()));
  stream.view().synchronize();
  std::vector<float> host(kValues);
  SVDSERVE_CUDA_CHECK(cudaMemcpy(host.data(), values.data(), values.size(),
                                 cudaMemcpyDeviceToHost));
  double sum = 0.0;
  double sum_squares = 0.0;
  for (const float value : host) {
    ASSERT_TRUE(std::isfinite(value));
    sum += value;
    sum_squares += double{value} * value;
  }
  const double mean = sum / kValues;
  // N(0, 1): the sample mean's standard error is 1/256 here, the variance's about 1/181.
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(sum_squares / kValues - mean * mean, 1.0, 0.03);
}

TEST_F(GpuCudaCheckTest, RefusedPinnedAllocationLeavesNoErrorForTheNextLaunch) {
  EXPECT_THROW((void)gpu::PinnedMemory::allocate(kAbsurdBytes), ResourceExhausted);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  EXPECT_NO_THROW(SVDSERVE_CUDA_CHECK_LAUNCH());
  expect_gaussian_launch_succeeds();
}

TEST_F(GpuCudaCheckTest, RefusedDeviceAllocationLeavesNoErrorForTheNextLaunch) {
  EXPECT_THROW((void)gpu::DeviceMemory::allocate(kAbsurdBytes), ResourceExhausted);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  expect_gaussian_launch_succeeds();
}

// The server's path: the host buffer pool asks the backend for page-locked output memory, is
// refused, falls back to ordinary memory and the batch is reconstructed on the same thread.
TEST_F(GpuCudaCheckTest, RefusedOutputMemoryDoesNotFailTheNextReconstruct) {
  const uint64_t seed = run_seed();
  SCOPED_TRACE(seed_text(seed));
  gpu::GpuBackendOptions options;
  options.streams = 1;
  options.svd_method = gpu::SvdMethod::gesvd;
  const std::unique_ptr<Backend> backend = gpu::make_gpu_backend(options);
  const ImageShape shape{96, 64, 3};
  const ImageF32 image = random_image(shape, seed);
  const ImageF32* pointer = &image;
  const auto factors = backend->decompose(std::span(&pointer, 1), shape.full_rank());
  ASSERT_EQ(factors.size(), 1U);
  const auto reconstruct = [&] {
    std::vector<uint8_t> pixels(shape.values(), 0xAB);
    const ReconstructItem item{factors[0].get(), shape.full_rank(), OutputPixels::u8,
                               std::as_writable_bytes(std::span(pixels))};
    backend->reconstruct(std::span(&item, 1));
    return pixels;
  };
  const std::vector<uint8_t> before = reconstruct();

  EXPECT_THROW((void)backend->allocate_output_memory(kAbsurdBytes), ResourceExhausted);
  std::vector<uint8_t> after;
  ASSERT_NO_THROW(after = reconstruct());
  EXPECT_EQ(after, before);
  // Full rank gives the image back: planar input, interleaved (HWC) output.
  const std::size_t pixels = shape.pixels_per_channel();
  for (std::size_t p = 0; p < pixels; ++p) {
    for (uint32_t c = 0; c < shape.channels; ++c) {
      const int expected = round_to_u8(image.plane(c)[p]);
      ASSERT_LE(std::abs(int{after[p * shape.channels + c]} - expected), 1)
          << "pixel " << p << " channel " << c;
    }
  }
}

}  // namespace
// Errors that leave a device's context unusable are DeviceFailure, from the runtime's checks and
// from a driver call's CUresult alike; others stay InternalError. Host code: no device needed.
TEST(CudaCheck, ErrorsThatLoseTheDeviceAreDeviceFailures) {
  EXPECT_THROW(SVDSERVE_CUDA_CHECK(cudaErrorLaunchFailure), DeviceFailure);
  EXPECT_THROW(SVDSERVE_CUDA_CHECK(cudaErrorIllegalAddress), DeviceFailure);
  EXPECT_THROW(SVDSERVE_CUDA_CHECK(cudaErrorInvalidValue), InternalError);
  EXPECT_THROW(SVDSERVE_CUDA_CHECK(cudaErrorMemoryAllocation), ResourceExhausted);
  EXPECT_THROW(gpu::detail::throw_driver_error(719, "launch failed"), DeviceFailure);  // LAUNCH_FAILED
  EXPECT_THROW(gpu::detail::throw_driver_error(1, "invalid value"), InternalError);
}

}  // namespace svdserve::test
