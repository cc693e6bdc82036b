#pragma once
// Internal to the fused reconstruction: one type per kernel variant, defined in the variant's
// file: whether it can implement a launch (the policy asks), and its launcher (run), which
// launch_fused_reconstruct (fused.cpp) calls after checking the arguments.

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
#include "kernels/gpu/reconstruct/policy.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

// The kernels take the channel count as a template parameter (the interleaving unrolls), so each
// launcher turns the runtime count into one: launch(std::integral_constant<uint32_t, C>{}).
inline constexpr uint32_t kMaxFusedChannels = 4;

template <typename Launch>
void dispatch_channels(uint32_t channels, Launch&& launch) {
  switch (channels) {
    case 1: return launch(std::integral_constant<uint32_t, 1>{});
    case 2: return launch(std::integral_constant<uint32_t, 2>{});
    case 3: return launch(std::integral_constant<uint32_t, 3>{});
    case 4: return launch(std::integral_constant<uint32_t, 4>{});
    default: break;
  }
  throw InvalidArgument("fused reconstruction supports 1 to " + std::to_string(kMaxFusedChannels) +
                        " channels, not " + std::to_string(channels));
}

namespace variants {

// tile64.cu: 64 x 64 tiles, 4 x 4 per thread; f32 output.
struct Tile64 {
  [[nodiscard]] static bool can_implement(const ReconstructLaunch& launch) noexcept;
  [[nodiscard]] static uint32_t tile_rows() noexcept;
  static void run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& launch, StreamView stream);
};

// tile128.cu: 128 x 128 tiles, 8 x 8 per thread; u8 output.
struct Tile128 {
  [[nodiscard]] static bool can_implement(const ReconstructLaunch& launch) noexcept;
  [[nodiscard]] static uint32_t tile_rows() noexcept;
  static void run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& launch, StreamView stream);
};

// rows.cu: 4 rows x 16 pixels per thread, no shared tile; u8 output at rank 1.
struct Rows {
  [[nodiscard]] static bool can_implement(const ReconstructLaunch& launch) noexcept;
  static void run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& launch, StreamView stream);
};

// tensor.cu: 128 x 128 tiles on mma.sync (3xTF32); u8 output.
struct Tensor {
  [[nodiscard]] static bool can_implement(const ReconstructLaunch& launch) noexcept;
  [[nodiscard]] static uint32_t tile_rows() noexcept;
  static void run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& launch, StreamView stream);
};

// wgmma.cu: tensor's tiles on wgmma (3xFP16) from the tasks' wgmma operands; u8 output, sm_90a.
struct Wgmma {
  [[nodiscard]] static bool can_implement(const ReconstructLaunch& launch) noexcept;
  [[nodiscard]] static uint32_t tile_rows() noexcept;
  static void run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                  const ReconstructLaunch& launch, StreamView stream);
};

}  // namespace variants
}  // namespace svdserve::gpu
