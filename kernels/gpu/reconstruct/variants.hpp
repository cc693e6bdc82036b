#pragma once
// Internal to the fused reconstruction: the launchers of each kernel variant, which
// launch_fused_reconstruct (reconstruct_fused.cu) chooses between. Arguments are validated there.

#include <cstdint>
#include <string>
#include <type_traits>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"
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

// reconstruct_fused.cu: 64 x 64 tiles, 4 x 4 per thread; u8 and f32.
void launch_fused_tile64(const ReconstructTask* tasks_device, uint32_t count,
                         const ImageShape& shape, OutputPixels pixels, StreamView stream);
[[nodiscard]] uint32_t fused_tile64_rows() noexcept;

// reconstruct_fused_tile128.cu: 128 x 128 tiles, 8 x 8 per thread; u8 only.
void launch_fused_tile128_u8(const ReconstructTask* tasks_device, uint32_t count,
                             const ImageShape& shape, StreamView stream);
[[nodiscard]] uint32_t fused_tile128_rows() noexcept;

// reconstruct_fused_tensor.cu: 128 x 128 tiles on the tensor cores (3xTF32); u8 only.
void launch_fused_tensor_u8(const ReconstructTask* tasks_device, uint32_t count,
                            const ImageShape& shape, StreamView stream);
[[nodiscard]] uint32_t fused_tensor_rows() noexcept;

// reconstruct_fused_wgmma.cu: tensor's tiles on wgmma; sm_90 only (fused_wgmma_supported).
// max_rank: the largest task rank (it picks one block per tile or blocks that loop over tiles).
void launch_fused_wgmma_u8(const ReconstructTask* tasks_device, uint32_t count,
                           const ImageShape& shape, uint32_t max_rank, StreamView stream);
[[nodiscard]] uint32_t fused_wgmma_rows() noexcept;

// reconstruct_fused_rows.cu: 4 rows x 16 pixels per thread, no shared tile; u8 only.
// max_rank: the largest task rank (rank 1 has its own specialisation).
void launch_fused_rows_u8(const ReconstructTask* tasks_device, uint32_t count,
                          const ImageShape& shape, uint32_t max_rank, StreamView stream);

}  // namespace svdserve::gpu
