// Fused reconstruction for small ranks (FusedVariant::low_rank: rank <= 16), u8 output only.
//
// Why a third kernel: at k <= 16 the work is mostly rounding and storing bytes, and tile64 was
// latency-bound (~1.1 TB/s of stores against ~2.9 possible): per channel it waited for one global
// load of a factor slice and two __syncthreads, so a block spent most of its life waiting. Here:
//  - a block is persistent (grid = what fits on the device) and walks 64 x 64 tiles; the whole
//    factor set of a tile (all channels, all k <= 16: one load per thread and channel) is fetched
//    into registers while the previous tile is computed, so the global latency is hidden;
//  - each thread computes a 4 x 4 patch per channel from shared memory (float4 loads, the same
//    layout as tile64), rounds with round_to_u8_bits (2 instructions) and packs the bytes of its
//    4 interleaved pixels per row into words in registers, which go to the staging tile as
//    32-bit stores (bytes only when the output rows are not word-aligned);
//  - the staging tile leaves with 16-byte stores (reconstruct_tile_io.cuh), two __syncthreads per
//    tile in all.
// Summation per output is k = 0, 1, ..., rank - 1, one fmaf each, from 0: the same order as
// tile64 and tile128, so all variants give bit-identical pixels.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/reconstruct_fused_variants.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;
using detail::kVectorFloats;

constexpr uint32_t kTile = 64;          // pixels per tile side
constexpr uint32_t kMaxRank = 16;       // every k of a tile in shared memory at once
constexpr uint32_t kPatch = 4;          // 4 x 4 outputs per thread, per channel
constexpr uint32_t kThreadsPerSide = kTile / kPatch;
constexpr uint32_t kThreads = kThreadsPerSide * kThreadsPerSide;
constexpr uint32_t kMaxChannels = 4;
constexpr uint32_t kBytesPerWord = 4;
// Registers: 16 accumulators, C packed words per patch row, 8 C prefetched floats, operands:
// 80 fit 3 blocks per SM up to 3 channels; 4 channels need more (2 per SM) or they spill.
template <uint32_t kChannels>
constexpr int min_blocks_per_sm() {
  return kChannels <= 3 ? 3 : 2;
}
constexpr std::size_t kSharedBytesWithoutOptIn = 48 * 1024;

static_assert(kThreads == 256);
// The loader gives each thread one float4 of US and one of V per channel.
static_assert(kMaxRank * kTile == kVectorFloats * kThreads);
constexpr uint32_t kLoadersPerRow = kTile / kVectorFloats;

using Slice = float[kMaxRank][kTile];  // one channel's factor columns for the tile
using Patch = float[kPatch][kPatch];

template <uint32_t kChannels>
constexpr uint32_t pitch() {
  return detail::staging_pitch<uint8_t, kChannels, kTile>();
}

template <uint32_t kChannels>
constexpr std::size_t factor_bytes() {
  return 2 * kChannels * sizeof(Slice);  // US slices, then V slices
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return factor_bytes<kChannels>() + std::size_t{kTile} * pitch<kChannels>();
}

// Which tile of which task a tile index names (tasks outermost, then tile rows).
struct TilePlace {
  uint32_t task;
  uint32_t row0;
  uint32_t col0;
};

__device__ __forceinline__ TilePlace place_of(uint32_t tile, uint32_t row_tiles,
                                              uint32_t col_tiles) {
  const uint32_t per_task = row_tiles * col_tiles;
  const uint32_t task = tile / per_task;
  const uint32_t within = tile - task * per_task;
  const uint32_t tile_row = within / col_tiles;
  return {task, tile_row * kTile, (within - tile_row * col_tiles) * kTile};
}

// One tile's factors in flight: a float4 of US and of V per channel, for this thread's slot.
template <uint32_t kChannels>
struct TileFactors {
  float4 us[kChannels];
  float4 v[kChannels];
};

template <uint32_t kChannels>
__device__ __forceinline__ TileFactors<kChannels> load_tile(const ReconstructTask& task,
                                                            const TilePlace& place,
                                                            uint32_t height, uint32_t width) {
  const uint32_t k = threadIdx.x / kLoadersPerRow;
  const uint32_t element = threadIdx.x % kLoadersPerRow * kVectorFloats;
  const uint32_t rank = min(task.rank, kMaxRank);
  TileFactors<kChannels> f;
#pragma unroll
  for (uint32_t c = 0; c < kChannels; ++c) {
    const float* us = task.us + std::size_t{c} * height * task.rank_kept;
    const float* v = task.v + std::size_t{c} * width * task.rank_kept;
    f.us[c] = detail::load_four(us, height, k, rank, place.row0 + element, height,
                                detail::vector_aligned(us, height));
    f.v[c] = detail::load_four(v, width, k, rank, place.col0 + element, width,
                               detail::vector_aligned(v, width));
  }
  return f;
}

template <uint32_t kChannels>
__device__ __forceinline__ void store_tile(const TileFactors<kChannels>& f, Slice* us_slices,
                                           Slice* v_slices) {
  const uint32_t k = threadIdx.x / kLoadersPerRow;
  const uint32_t element = threadIdx.x % kLoadersPerRow * kVectorFloats;
#pragma unroll
  for (uint32_t c = 0; c < kChannels; ++c) {
    *reinterpret_cast<float4*>(&us_slices[c][k][element]) = f.us[c];
    *reinterpret_cast<float4*>(&v_slices[c][k][element]) = f.v[c];
  }
}

__device__ __forceinline__ void accumulate_k(const Slice& us, const Slice& v, uint32_t k,
                                             uint32_t patch_row, uint32_t patch_col,
                                             Patch& acc) {
  const float4 a4 = *reinterpret_cast<const float4*>(&us[k][patch_row]);
  const float4 b4 = *reinterpret_cast<const float4*>(&v[k][patch_col]);
  const float a[kPatch] = {a4.x, a4.y, a4.z, a4.w};
  const float b[kPatch] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
  for (uint32_t r = 0; r < kPatch; ++r) {
#pragma unroll
    for (uint32_t c = 0; c < kPatch; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

// __byte_perm selector that keeps `word` and puts byte 0 of the value at byte `position`.
constexpr uint32_t insert_selector(uint32_t position) {
  uint32_t selector = 0;
  for (uint32_t i = 0; i < kBytesPerWord; ++i) {
    selector |= (i == position ? 4U : i) << (4 * i);
  }
  return selector;
}

template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm<kChannels>())
    fused_reconstruct_low_rank_kernel(const ReconstructTask* __restrict__ tasks, uint32_t count,
                                      uint32_t height, uint32_t width) {
  constexpr uint32_t kPitch = pitch<kChannels>();
  constexpr uint32_t kWordsPerRow = kPatch * kChannels / kBytesPerWord;  // a patch row's pixels
  static_assert(kPitch % kStoreBytes == 0);
  static_assert(kPatch % kBytesPerWord == 0);

  extern __shared__ __align__(16) unsigned char shared[];
  auto* const us_slices = reinterpret_cast<Slice*>(shared);
  auto* const v_slices = reinterpret_cast<Slice*>(shared + kChannels * sizeof(Slice));
  unsigned char* const staging = shared + factor_bytes<kChannels>();

  const uint32_t row_tiles = (height + kTile - 1) / kTile;
  const uint32_t col_tiles = (width + kTile - 1) / kTile;
  const uint32_t tiles = row_tiles * col_tiles * count;
  const std::size_t row_bytes = std::size_t{width} * kChannels;
  const uint32_t patch_row = threadIdx.x / kThreadsPerSide * kPatch;
  const uint32_t patch_col = threadIdx.x % kThreadsPerSide * kPatch;

  uint32_t tile = blockIdx.x;
  if (tile >= tiles) return;
  TilePlace place = place_of(tile, row_tiles, col_tiles);
  ReconstructTask task = tasks[place.task];
  store_tile<kChannels>(load_tile<kChannels>(task, place, height, width), us_slices, v_slices);
  __syncthreads();

#pragma unroll 1
  while (true) {
    // The next tile's factors are in flight while this one is computed and staged.
    const uint32_t next_tile = tile + gridDim.x;
    const bool more = next_tile < tiles;
    TileFactors<kChannels> next_factors{};
    if (more) {
      const TilePlace next_place = place_of(next_tile, row_tiles, col_tiles);
      next_factors = load_tile<kChannels>(tasks[next_place.task], next_place, height, width);
    }

    unsigned char* const tile_out = static_cast<unsigned char*>(task.out) +
                                    place.row0 * row_bytes + std::size_t{place.col0} * kChannels;
    const auto tile_address = reinterpret_cast<std::uintptr_t>(tile_out);
    const uint32_t rank = min(task.rank, kMaxRank);

    uint32_t words[kPatch][kWordsPerRow] = {};
#pragma unroll
    for (uint32_t channel = 0; channel < kChannels; ++channel) {
      Patch acc = {};
#pragma unroll 4
      for (uint32_t k = 0; k < rank; ++k) {
        accumulate_k(us_slices[channel], v_slices[channel], k, patch_row, patch_col, acc);
      }
#pragma unroll
      for (uint32_t r = 0; r < kPatch; ++r) {
#pragma unroll
        for (uint32_t p = 0; p < kPatch; ++p) {
          const uint32_t byte = p * kChannels + channel;
          words[r][byte / kBytesPerWord] =
              __byte_perm(words[r][byte / kBytesPerWord], detail::round_to_u8_bits(acc[r][p]),
                          insert_selector(byte % kBytesPerWord));
        }
      }
    }

    // A patch row is kWordsPerRow whole words of the output row; they are word-aligned in the
    // staging tile when the output rows are (the tile's staging shift is then a multiple of 4).
    // Rows and columns past the image edge land in the staging tile too (it is always whole);
    // the copy-out never reads them.
    const bool word_aligned = tile_address % kBytesPerWord == 0 && row_bytes % kBytesPerWord == 0;
#pragma unroll
    for (uint32_t r = 0; r < kPatch; ++r) {
      const uint32_t row = patch_row + r;
      unsigned char* const stage = staging + row * kPitch +
                                   detail::misalignment(tile_address + row * row_bytes) +
                                   patch_col * kChannels;
      if (word_aligned) {
#pragma unroll
        for (uint32_t w = 0; w < kWordsPerRow; ++w) {
          reinterpret_cast<uint32_t*>(stage)[w] = words[r][w];
        }
      } else {
#pragma unroll
        for (uint32_t b = 0; b < kWordsPerRow * kBytesPerWord; ++b) {
          stage[b] = static_cast<unsigned char>(words[r][b / kBytesPerWord] >>
                                                (8 * (b % kBytesPerWord)));
        }
      }
    }
    __syncthreads();  // staging complete, factor slices free
    if (more) store_tile<kChannels>(next_factors, us_slices, v_slices);
    detail::copy_out_tile<uint8_t, kChannels, kPitch, kThreads>(
        staging, tile_out, row_bytes, min(kTile, height - place.row0),
        min(kTile, width - place.col0));
    if (!more) break;
    __syncthreads();  // staging read, next factor slices in place
    // Recomputed rather than kept live through the tile: registers are the occupancy limit.
    tile = next_tile;
    place = place_of(tile, row_tiles, col_tiles);
    task = tasks[place.task];
  }
}

template <uint32_t kChannels>
void launch(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
            StreamView stream) {
  constexpr std::size_t kSharedBytes = shared_bytes<kChannels>();
  const auto kernel = fused_reconstruct_low_rank_kernel<kChannels>;
  if constexpr (kSharedBytes > kSharedBytesWithoutOptIn) {
    // Per device and cheap; set on every launch rather than cached per process.
    SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSharedBytes)));
  }
  int device = 0;
  int sms = 0;
  int blocks_per_sm = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  SVDSERVE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks_per_sm, kernel, static_cast<int>(kThreads), kSharedBytes));
  const uint64_t tiles = uint64_t{(shape.height + kTile - 1) / kTile} *
                         ((shape.width + kTile - 1) / kTile) * count;
  if (tiles > UINT32_MAX) {
    throw InvalidArgument("fused reconstruction: " + std::to_string(tiles) +
                          " tiles exceed one launch");
  }
  const auto resident = static_cast<uint64_t>(std::max(1, sms * blocks_per_sm));
  const auto blocks = static_cast<uint32_t>(std::min(tiles, resident));
  kernel<<<blocks, kThreads, kSharedBytes, stream.value()>>>(tasks_device, count, shape.height,
                                                             shape.width);
  SVDSERVE_CUDA_CHECK_LAUNCH();
}

}  // namespace

uint32_t fused_low_rank_max_rank() noexcept { return kMaxRank; }

void launch_fused_low_rank_u8(const ReconstructTask* tasks_device, uint32_t count,
                              const ImageShape& shape, StreamView stream) {
  switch (shape.channels) {
    case 1: return launch<1>(tasks_device, count, shape, stream);
    case 2: return launch<2>(tasks_device, count, shape, stream);
    case 3: return launch<3>(tasks_device, count, shape, stream);
    case 4: return launch<4>(tasks_device, count, shape, stream);
    default: break;
  }
  throw InvalidArgument("fused reconstruction supports 1 to " + std::to_string(kMaxChannels) +
                        " channels, not " + std::to_string(shape.channels));
}

}  // namespace svdserve::gpu
