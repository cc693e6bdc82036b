// The rows variant (FusedVariant::rows): rank 1 to u8, out = round_to_u8(US_1 V_1^T), each
// thread's pixels computed in registers, row by row.
//
// Why a kernel of its own: at k = 1 the reconstruction moves 1 byte per output value and does one
// FMA for it, so everything besides the FMA counts; the floor is the bytes, and the time goes to
// instructions per value and to how many warps hide their latency. Here:
//  - a thread owns 4 rows x 16 pixels (all channels): its factors (4 US values and 16 V values
//    per channel, 60 registers for three channels) are loaded once into registers and the rows
//    are computed one after the other, each into C words of interleaved bytes (16 pixels are
//    16 * C bytes, i.e. C aligned 16-byte chunks for any C);
//  - rounding without F2I (round_to_u8_packable): FFMA.SAT, FADD.RM, IMNMX, all full or half
//    rate, and the byte lands in place with one PRMT: five instructions per value with the FMA;
//  - 96 registers for up to three channels (__launch_bounds__ asks for 5 blocks of 4 warps per
//    SM): 20 warps per SM;
//  - on sm_90 each warp stages its rows in shared memory laid out like the output and hands
//    them to the copy engine (bulk_store.cuh): per row, the lanes' 16 * C bytes form runs of up
//    to 512 * C contiguous bytes; each warp does two pixel groups, and waits for the engine to
//    have read the first group's rows only after loading the second group's factors. Before
//    sm_90 each thread stores its own C chunks.
// Row by row from registers at 96 registers and 20 warps: 81-92 % of the floor at k = 1 (H100);
// 128 registers and 16 warps 77-87 %; 80 registers (24 warps) spilled: 58-62 %.
// Each output is fmaf(US, V, 0), as the first term of tile64's and tile128's sums: the same
// pixels.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_store.cuh"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/variants.hpp"
#include "kernels/gpu/reconstruct/tile_io.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;

constexpr uint32_t kGroupPixels = 16;  // a thread's columns
constexpr uint32_t kRows = 4;          // a thread's rows: one float4 of US per k
constexpr uint32_t kThreads = 128;
constexpr uint32_t kIterations = 2;  // pixel groups per thread (see the kernel)
// 20 warps per SM, <= 102 registers (96 for three channels, no spills): 81-92 % of the floor, the
// compiler's own 128-168 registers 65-87 % (H100). Four channels would spill there (80 registers
// hold their factors): 12 warps for them.
template <uint32_t kChannels>
constexpr int kMinBlocksPerSm = kChannels == 4 ? 3 : 5;
constexpr uint32_t kWarpSize = 32;
[[maybe_unused]] constexpr uint32_t kWarps = kThreads / kWarpSize;  // sm_90 only
[[maybe_unused]] constexpr uint32_t kFullWarp = 0xFFFFFFFFU;  // sm_90 only

// A thread's 16 pixels of one row, interleaved like the output: 16 * C bytes in 4 * C words.
template <uint32_t kChannels>
constexpr uint32_t kGroupWords = kGroupPixels * kChannels / 4;

// One warp's rows staged for the bulk copy (sm_90): chunk (lane * C + i) of row r is the i-th
// 16 bytes of that lane's pixels in row r.
template <uint32_t kChannels>
struct WarpRows {
  uint4 chunk[kRows][kWarpSize * kChannels];
};

// Inserts `byte_bits`'s low byte at byte `position` of `word` (one PRMT).
__device__ __forceinline__ uint32_t insert_byte(uint32_t word, uint32_t byte_bits,
                                                uint32_t position) {
  constexpr uint32_t kSelectors[4] = {0x3214, 0x3240, 0x3410, 0x4210};
  return __byte_perm(word, byte_bits, kSelectors[position]);
}

// Rounds a channel's 16 values into their bytes of the row's interleaved words.
template <uint32_t kChannels>
__device__ __forceinline__ void pack_channel(const float (&values)[kGroupPixels], uint32_t channel,
                                             uint32_t (&words)[kGroupWords<kChannels>]) {
#pragma unroll
  for (uint32_t p = 0; p < kGroupPixels; ++p) {
    const uint32_t byte = p * kChannels + channel;
    words[byte / 4] =
        insert_byte(words[byte / 4], detail::round_to_u8_packable(values[p]), byte % 4);
  }
}

// The factors of a thread's 4 rows x 16 pixels, all channels, held in registers while the 4 rows
// are rounded one after the other (60 registers for 3 channels).
template <uint32_t kChannels>
struct RankOneFactors {
  float4 us[kChannels];                     // rows row0 .. row0 + 3
  float4 v[kChannels][kGroupPixels / 4];    // columns col0 .. col0 + 15

  __device__ __forceinline__ void load(const ReconstructTask& task, uint32_t height,
                                       uint32_t width, uint32_t row0, uint32_t col0) {
    const std::size_t plane = std::size_t{task.rank_kept};
#pragma unroll
    for (uint32_t channel = 0; channel < kChannels; ++channel) {
      const float* us_channel = task.us + std::size_t{channel} * height * plane;
      const float* v_channel = task.v + std::size_t{channel} * width * plane;
      us[channel] = detail::load_four(us_channel, height, 0, task.rank, row0, height,
                                      detail::vector_aligned(us_channel, height));
      const bool v_aligned = detail::vector_aligned(v_channel, width);
#pragma unroll
      for (uint32_t q = 0; q < kGroupPixels / 4; ++q) {
        v[channel][q] = detail::load_four(v_channel, width, 0, task.rank, col0 + 4 * q, width,
                                          v_aligned);
      }
    }
  }
};

__device__ __forceinline__ float component(const float4& four, uint32_t i) {
  return i == 0 ? four.x : i == 1 ? four.y : i == 2 ? four.z : four.w;
}

// Row r (0..3) of the thread's pixels, rounded and interleaved like the output.
template <uint32_t kChannels>
__device__ __forceinline__ void reconstruct_row(const RankOneFactors<kChannels>& rank_one,
                                                uint32_t r,
                                                uint32_t (&words)[kGroupWords<kChannels>]) {
#pragma unroll
  for (uint32_t w = 0; w < kGroupWords<kChannels>; ++w) words[w] = 0;
#pragma unroll
  for (uint32_t channel = 0; channel < kChannels; ++channel) {
    float values[kGroupPixels];
    const float a = component(rank_one.us[channel], r);
    const float* b = reinterpret_cast<const float*>(rank_one.v[channel]);
#pragma unroll
    for (uint32_t p = 0; p < kGroupPixels; ++p) values[p] = fmaf(a, b[p], 0.0F);
    pack_channel<kChannels>(values, channel, words);
  }
}

// Each warp takes 32 consecutive pixel groups (lane = group) per iteration, gridDim.x * 4 warps
// apart; the grid is sized for kIterations of them. On sm_90 the copy engine reads one
// iteration's staged rows while the warp loads the next iteration's factors (measured: two
// iterations beat one, four and eight).
template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<kChannels>)
    fused_reconstruct_rows_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
                                  uint32_t width, uint32_t groups_per_row, uint32_t groups) {
  constexpr uint32_t kWords = kGroupWords<kChannels>;
  constexpr uint32_t kChunks = kChannels;  // 16-byte chunks per thread and row
#if SVDSERVE_HAS_BULK_STORE
  __shared__ WarpRows<kChannels> staging_of_warp[kWarps];
  WarpRows<kChannels>& staging = staging_of_warp[threadIdx.x / kWarpSize];
#endif
  const uint32_t lane = threadIdx.x % kWarpSize;
  const ReconstructTask task = tasks[blockIdx.y];
  const std::size_t row_bytes = std::size_t{width} * kChannels;
  auto* const out = static_cast<unsigned char*>(task.out);

  // The loop condition is the warp's first group: the whole warp iterates (ballots below).
#pragma unroll 1
  for (uint32_t warp_group = blockIdx.x * kThreads + threadIdx.x - lane; warp_group < groups;
       warp_group += gridDim.x * kThreads) {
    const uint32_t group = warp_group + lane;
    const bool active = group < groups;  // inactive lanes still take part in the warp's stores
    const uint32_t row0 = active ? group / groups_per_row * kRows : 0;
    const uint32_t col0 = active ? group % groups_per_row * kGroupPixels : 0;
    RankOneFactors<kChannels> rank_one;
    rank_one.load(task, height, width, row0, col0);

#if SVDSERVE_HAS_BULK_STORE
    detail::wait_bulk_reads();  // the previous iteration's staged rows are free again
    __syncwarp();
#endif
    bool whole[kRows];  // row r's 16 pixels go out as C aligned 16-byte chunks
#pragma unroll
    for (uint32_t r = 0; r < kRows; ++r) {
      // Computed for inactive lanes too (inside the image at row0 = col0 = 0; never stored).
      uint32_t packed[kWords];
      reconstruct_row<kChannels>(rank_one, r, packed);
      const uint32_t row = row0 + r;
      unsigned char* const segment = out + row * row_bytes + std::size_t{col0} * kChannels;
      const bool row_inside = active && row < height;
      whole[r] = row_inside && col0 + kGroupPixels <= width &&
                 detail::misalignment(reinterpret_cast<std::uintptr_t>(segment)) == 0;
      // Otherwise (image edge, or a row that does not start 16-byte aligned) the thread writes
      // its bytes one by one.
      if (row_inside && !whole[r]) {
        const uint32_t bytes = (min(width, col0 + kGroupPixels) - col0) * kChannels;
#pragma unroll
        for (uint32_t b = 0; b < kWords * 4; ++b) {  // unrolled: `packed` stays in registers
          if (b < bytes) {
            __stwb(segment + b,
                   static_cast<unsigned char>(__byte_perm(packed[b / 4], 0, b % 4)));
          }
        }
      }
#if SVDSERVE_HAS_BULK_STORE
      // Staged like the output: lane after lane, C chunks each (STS.128 at a lane stride of
      // 16 * C bytes: conflict-free for odd C, two-way for C = 2 and four-way for C = 4).
#pragma unroll
      for (uint32_t i = 0; i < kChunks; ++i) {
        staging.chunk[r][lane * kChunks + i] =
            make_uint4(packed[4 * i], packed[4 * i + 1], packed[4 * i + 2], packed[4 * i + 3]);
      }
#else
      if (whole[r]) {
#pragma unroll
        for (uint32_t i = 0; i < kChunks; ++i) {
          __stwb(reinterpret_cast<uint4*>(segment) + i,
                 make_uint4(packed[4 * i], packed[4 * i + 1], packed[4 * i + 2],
                            packed[4 * i + 3]));
        }
      }
#endif
    }
#if SVDSERVE_HAS_BULK_STORE
    detail::fence_shared_for_bulk_copy();
    __syncwarp();
    // Per row, the whole lanes form runs that are contiguous in the output too (consecutive
    // lanes are consecutive pixel groups, unless a new image row starts): the first lane of each
    // run hands it to the copy engine.
#pragma unroll
    for (uint32_t r = 0; r < kRows; ++r) {
      const uint32_t whole_lanes = __ballot_sync(kFullWarp, whole[r]);
      const bool first =
          whole[r] && (lane == 0 || col0 == 0 || (whole_lanes >> (lane - 1) & 1U) == 0);
      const uint32_t first_lanes = __ballot_sync(kFullWarp, first);
      if (first) {
        const uint32_t later = (kFullWarp << lane) << 1;
        const uint32_t stops = (~whole_lanes | first_lanes) & later;
        const uint32_t end = stops == 0 ? kWarpSize : __ffs(stops) - 1;
        unsigned char* const segment =
            out + (row0 + r) * row_bytes + std::size_t{col0} * kChannels;
        detail::bulk_store(segment, &staging.chunk[r][lane * kChunks],
                           (end - lane) * kChunks * kStoreBytes);
      }
    }
    detail::commit_bulk_group();
#endif
  }
#if SVDSERVE_HAS_BULK_STORE
  detail::wait_bulk_reads();  // before the block's shared memory goes
#endif
}

template <uint32_t kChannels>
void launch(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
            StreamView stream) {
  const uint32_t groups_per_row = (shape.width + kGroupPixels - 1) / kGroupPixels;
  const uint64_t groups = uint64_t{groups_per_row} * ((shape.height + kRows - 1) / kRows);
  const uint64_t groups_per_block = uint64_t{kThreads} * kIterations;
  const dim3 grid(static_cast<uint32_t>((groups + groups_per_block - 1) / groups_per_block), count);
  fused_reconstruct_rows_kernel<kChannels><<<grid, kThreads, 0, stream.value()>>>(
      tasks_device, shape.height, shape.width, groups_per_row, static_cast<uint32_t>(groups));
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

namespace variants {

// The factors of rank 1 only: they are what fits in registers.
bool Rows::can_implement(const ReconstructLaunch& launch) noexcept {
  return launch.pixels == OutputPixels::u8 && launch.max_rank <= 1;
}

void Rows::run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
               const ReconstructLaunch& /*launch*/, StreamView stream) {
  dispatch_channels(shape.channels, [&](auto channels) {
    launch<decltype(channels)::value>(tasks_device, count, shape, stream);
  });
}

}  // namespace variants
}  // namespace svdserve::gpu
