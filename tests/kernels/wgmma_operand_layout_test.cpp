// The wgmma operand layout's arithmetic (wgmma_operands.hpp, gpu_factors.hpp): host only, so it
// runs without a device. What the writer puts there is checked on the GPU by the reconstruction
// tests (gpu_reconstruct_test.cpp), whose wgmma results come from it.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>

#include "kernels/errors.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"

namespace svdserve::test {
namespace {

using gpu::WgmmaOperandLayout;
constexpr std::size_t kUs = WgmmaOperandLayout::kStepBytes;
constexpr std::size_t kV = WgmmaOperandLayout::kStepBytes;

TEST(WgmmaOperandLayout, BlocksAreContiguousStepsOfWholeTiles) {
  // 300 x 130, 3 channels, rank 37: 2 row tiles, 3 column tiles, 3 k-steps (the last part zero).
  const WgmmaOperandLayout layout{{300, 130, 3}, 37};
  EXPECT_EQ(layout.steps(), 3U);
  EXPECT_EQ(layout.row_tiles(), 2U);
  EXPECT_EQ(layout.col_tiles(), 3U);
  // US: [channel][row tile][step], one 8 KiB block each (FP16 big and small parts).
  EXPECT_EQ(kUs, 8192U);
  EXPECT_EQ(layout.us_offset(0, 0, 0), 0U);
  EXPECT_EQ(layout.us_offset(0, 0, 1), kUs);
  EXPECT_EQ(layout.us_offset(0, 1, 0), 3 * kUs);
  EXPECT_EQ(layout.us_offset(2, 1, 2), (2 * 2 * 3 + 3 + 2) * kUs);
  // V after every US block: [channel][column tile][step], 8 KiB (FP16 big and small parts) each.
  EXPECT_EQ(kV, 8192U);
  const std::size_t us_bytes = 3 * 2 * 3 * kUs;
  EXPECT_EQ(layout.v_offset(0, 0, 0), us_bytes);
  EXPECT_EQ(layout.v_offset(0, 2, 1), us_bytes + (2 * 3 + 1) * kV);
  EXPECT_EQ(layout.v_offset(2, 2, 2) + kV, layout.bytes());
  EXPECT_EQ(layout.bytes(), us_bytes + 3 * 3 * 3 * kV);
  // Every block starts where the bulk copies may read (16-byte aligned).
  EXPECT_EQ(layout.us_offset(1, 1, 2) % 16, 0U);
  EXPECT_EQ(layout.v_offset(1, 2, 2) % 16, 0U);
}

TEST(WgmmaOperandLayout, IsUsPlusVForWholeTiles) {
  // 1024 x 1024, rank 64: the operands hold US's and V's FP16 big and small parts, as many bytes
  // as both in FP32.
  const ImageShape shape{1024, 1024, 3};
  const WgmmaOperandLayout layout{shape, 64};
  const std::size_t us_bytes = std::size_t{3} * 1024 * 64 * sizeof(float);
  EXPECT_EQ(layout.bytes(), us_bytes + us_bytes);
}

TEST(WgmmaOperandLayout, WriterRefusesChannelsOverFourGiB) {
  // 65536 wide at rank 16384: one channel's V blocks are 512 tiles x 1024 steps x 8 KiB = 4 GiB,
  // past the kernel's 32-bit steps. Refused before any device work (no device needed).
  const WgmmaOperandLayout too_wide{{65536, 8, 1}, 16384};
  EXPECT_THROW(gpu::write_wgmma_operands(nullptr, nullptr, too_wide, 8, nullptr, gpu::StreamView{}),
               InvalidArgument);
  const WgmmaOperandLayout too_tall{{8, 131072, 1}, 8192};  // US: 1024 x 512 x 8 KiB
  EXPECT_THROW(gpu::write_wgmma_operands(nullptr, nullptr, too_tall, 8, nullptr, gpu::StreamView{}),
               InvalidArgument);
}

TEST(WgmmaOperandExponent, KeepsUsUnderTwoToTheFourteenAndVUnderTwoToTheFifteen) {
  // Any 8-bit image up to 8192 x 8192 (|US| <= 255 x 8192): the smallest scale, 2^8.
  EXPECT_EQ(gpu::wgmma_operand_exponent(0.0), 8);
  EXPECT_EQ(gpu::wgmma_operand_exponent(255.0 * 8192), 8);
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::ldexp(1.0, 22) - 1), 8);
  // Beyond, one more power of two each time US's bound doubles, up to V's 2^15.
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::ldexp(1.0, 22)), 9);
  EXPECT_EQ(gpu::wgmma_operand_exponent(7.2e6), 9);
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::ldexp(1.0, 29) - 64), 15);
  // Past that, or not finite: no FP16 operands (the image reconstructs on tensor).
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::ldexp(1.0, 29)), std::nullopt);
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::numeric_limits<double>::infinity()), std::nullopt);
  EXPECT_EQ(gpu::wgmma_operand_exponent(std::numeric_limits<double>::quiet_NaN()), std::nullopt);
}

TEST(GpuFactorsBytes, OperandsFollowTheCanonicalFactorsAligned) {
  const ImageShape shape{333, 130, 3};
  const uint32_t rank = 37;
  const std::size_t canonical = std::size_t{3} * rank * (130 + 333) * sizeof(float);
  EXPECT_EQ(gpu::GpuFactors::bytes_for(shape, rank, false), canonical);
  const std::size_t offset = gpu::GpuFactors::wgmma_operands_offset(shape, rank);
  EXPECT_GE(offset, canonical);
  EXPECT_LT(offset, canonical + 256);
  EXPECT_EQ(offset % 256, 0U);
  const WgmmaOperandLayout layout{shape, rank};
  EXPECT_EQ(gpu::GpuFactors::bytes_for(shape, rank, true), offset + layout.bytes());
}

}  // namespace
}  // namespace svdserve::test
