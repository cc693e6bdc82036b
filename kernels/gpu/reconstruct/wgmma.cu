// The wgmma variant (FusedVariant::wgmma), u8 output, on Hopper's asynchronous warpgroup MMA:
// the tensor kernel's tiles and three products per term (big*big + big*small + small*big, see
// tensor.cu for the accuracy), but in FP16 with FP32 accumulators on m64n128k16 wgmmas: twice
// TF32's rate on two thirds of its operand bytes, for parts of the same 11 bits (FP16's range is
// handled by the operands' scale, wgmma_operands.hpp). It reads the
// factors from their wgmma operands, written once when the image is decomposed (US and V both
// split into FP16 parts, in wgmma's shared-memory layout), not from the canonical layout.
//
// Warp-specialised and persistent, one block per SM (the design of cuBLAS's Hopper GEMMs): a
// producer warp and two consumer warpgroups on pairs of 128 x 128 tiles: one above the other
// (sharing V), or, in the last row of an image with an odd number of row tiles, side by side
// (sharing US; PairGrid).
//  - The producer's one thread streams every k-step's operands (the two tiles' own 8 KiB blocks
//    and the one they share) into a ring of 24 KiB shared-memory stages by three bulk copies:
//    it waits for the stage's "empty" barrier (both consumers' hand-back), and the copies
//    complete its "full" barrier as their bytes land. It never waits for anything else, so the
//    copies run as far ahead as the ring is long.
//  - Consumer c owns the pair's tile c (two m64n128 accumulator sets, 128 registers a thread):
//    per k-step it waits for the stage, issues its six wgmmas with both operands from shared
//    memory, waits for the previous step's, and hands that stage back (one arrival). Both
//    consumers take every step of the one ring, in order; consumer 1 starts three steps behind
//    (so that their roundings fall apart: stagger_steps), and the ring bounds the lead after
//    that. No block barrier anywhere in the loop.
//  - A consumer rounds a channel into its own staging tile of pitched rows, which the copy
//    engine stores; it waits for those reads only before its next tile's first rounding. Where
//    the tile is a whole column of the task's output tensor map (output_tensor_map.hpp) one
//    thread stores it by one tensor store (tensor_store.cuh); else (no map, or the last, partial
//    tile column) the threads copy it out, or hand it to the copy engine a row each
//    (tile_pipeline.cuh). A tile past the image (a pair's second, where the tiles are
//    odd) is neither loaded, multiplied nor stored: its consumer takes the steps and hands them
//    back (at 1920 x 1080, 1 of 136 tiles; stacked everywhere, as at ranks 8 or less, 15 of 150);
//    a tile's bottom 64 rows past the image are neither multiplied nor rounded.
//  - Values at k >= the task's rank (the blocks hold them up to rank_kept) are zeroed in the stage
//    by the consumer before its wgmmas, in its own block (US stacked, V side by side), on the one
//    step of a channel that holds them.
//
// Why no block barrier: with one every k-step before one thread refilled the ring, 0.73-0.78 of
// the time at k = 256 went outside the MMAs; this design ran 1.07-1.32x faster at k = 16 and
// 1.03-1.12x at k = 64 and 256 (H100). Tensor-map stores: 1.06-1.12x at k = 64 (H100).
// sm_90a only (H100, H200); the policy chooses tensor elsewhere.

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct/bulk_load.cuh"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/named_barrier.cuh"
#include "kernels/gpu/reconstruct/variants.hpp"
#include "kernels/gpu/reconstruct/tile_io.cuh"
#include "kernels/gpu/reconstruct/tile_pipeline.cuh"
#include "kernels/gpu/reconstruct/ring_position.cuh"
#include "kernels/gpu/reconstruct/tensor_store.cuh"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"
#include "kernels/gpu/reconstruct/wgmma_ptx.cuh"

namespace svdserve::gpu {
namespace {

using detail::kWarpgroupThreads;
using detail::kWgmmaRows;
using Layout = WgmmaOperandLayout;

constexpr uint32_t kTile = Layout::kTile;
constexpr uint32_t kConsumers = 2;
constexpr uint32_t kWarpSize = 32;
// Two consumer warpgroups (warps 0-7: a warpgroup's warps must be 4 aligned ones), then the
// producer warp.
constexpr uint32_t kProducerThread = kConsumers * kWarpgroupThreads;
constexpr uint32_t kThreads = kProducerThread + kWarpSize;
static_assert(kTile == 2 * kWgmmaRows);
static_assert(kTile == kOutputTileRows && kTile == kOutputTileCols);  // a tensor store per tile

// A stage holds one k-step's operands of a pair of tiles in three 8 KiB slots: [upper US | lower
// US | V] for a stacked pair, [US | left V | right V] for one side by side (PairWork).
constexpr uint32_t kStepBytes = Layout::kStepBytes;
constexpr uint32_t kStageBytes = 3 * kStepBytes;

template <uint32_t kChannels>
constexpr uint32_t pitch() {
  return detail::staging_pitch<uint8_t, kChannels, kTile>();
}

// H100 / H200: 228 KiB of shared memory per SM, 1 KiB of it reserved per block.
constexpr std::size_t kSharedBytesPerSm = 228 * 1024;
constexpr std::size_t kReservedBytesPerBlock = 1024;
constexpr uint32_t kMaxStages = 8;

// A consumer's staging tile: rows of pitch() bytes, for its tensor store (tensor_store.cuh) or
// the threads' copy-out.
template <uint32_t kChannels>
constexpr std::size_t staging_bytes() {
  static_assert(pitch<kChannels>() == output_staging_pitch(kChannels));  // the map's box
  constexpr std::size_t kBytes = std::size_t{kTile} * pitch<kChannels>();
  static_assert(kBytes % detail::kStagingAlignment == 0);  // the next tile stays aligned
  return kBytes;
}

// Shared memory: the stages, the consumers' staging tiles, then the stages' full and empty
// barriers.
constexpr std::size_t staging_offset(uint32_t stages) {
  return std::size_t{stages} * kStageBytes;
}
static_assert(kStageBytes % detail::kStagingAlignment == 0);  // staging tiles stay aligned
template <uint32_t kChannels>
constexpr std::size_t shared_bytes_with(uint32_t stages) {
  return staging_offset(stages) + kConsumers * staging_bytes<kChannels>() +
         2 * std::size_t{stages} * sizeof(uint64_t);
}

// As many stages as fit beside the staging tiles, up to kMaxStages.
template <uint32_t kChannels>
constexpr uint32_t stages() {
  uint32_t s = kMaxStages;
  while (shared_bytes_with<kChannels>(s) + kReservedBytesPerBlock > kSharedBytesPerSm) --s;
  return s;
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return shared_bytes_with<kChannels>(stages<kChannels>());
}

static_assert(stages<1>() == 7 && stages<2>() == 6 && stages<3>() == 5 && stages<4>() == 3);
// Descriptor addresses: 14 bits of 16-byte units.
static_assert(shared_bytes<1>() < (1U << 18) && shared_bytes<2>() < (1U << 18) &&
              shared_bytes<3>() < (1U << 18) && shared_bytes<4>() < (1U << 18));
// A launch whose ranks are all 8 or less needs k 0-7 of each step only.
constexpr uint32_t kHalfStepMaxRank = Layout::kDepth / 2;

#if SVDSERVE_HAS_WGMMA

constexpr uint32_t kDepth = Layout::kDepth;  // values of k a step: FP16 wgmma's k16
static_assert(kDepth == detail::kWgmmaF16Depth);
constexpr uint32_t kHalfDepth = kDepth / 2;
constexpr uint32_t kPartBytes = Layout::kPartBytes;  // the small part after the big one
constexpr uint32_t kHalfStepBytes = Layout::kHalfStepBytes;
// The second 64 rows of a US part: 8 row groups of one core matrix further.
constexpr uint32_t kSecondRowsBytes = kWgmmaRows / 8 * detail::kCoreMatrixBytes;

// k-steps per channel of a task: at least one, so that rank 0 gives zeros.
__device__ __forceinline__ uint32_t slices_for(uint32_t rank) {
  return max(1U, (rank + kDepth - 1) / kDepth);
}

#endif  // SVDSERVE_HAS_WGMMA

// A launch's pairs of tiles, per task: first the stacked pairs, tiles 2r and 2r + 1 of a column
// (one above the other, sharing V), column fastest, then r; then, where the image has an odd
// number of row tiles and side_by_side holds, its last row's tiles in side-by-side pairs,
// columns 2j and 2j + 1 (sharing US). Without side_by_side the last row's tiles are the upper
// tiles of stacked pairs whose lower tile is past the image, and a consumer idles there.
// Side by side, both consumers have a tile (at 1920 x 1080 the last row's 15 tiles take 8 pairs
// instead of 15; one consumer idles in the eighth). Launches of ranks 8 or less keep stacked
// pairs: their V descriptors read k 0-7 again for k 8-15, which only US's zeros cancel
// (StageOperands), and side by side US is shared.
struct PairGrid {
  uint32_t row_tiles;
  uint32_t col_tiles;
  uint32_t stacked;   // a task's stacked pairs
  uint32_t per_task;  // and its side-by-side pairs after them

  __host__ __device__ PairGrid(uint32_t height, uint32_t width, bool side_by_side)
      : row_tiles((height + kTile - 1) / kTile),
        col_tiles((width + kTile - 1) / kTile),
        stacked(col_tiles * (side_by_side ? row_tiles / 2 : (row_tiles + 1) / 2)),
        per_task(stacked + (side_by_side && row_tiles % 2 != 0 ? (col_tiles + 1) / 2 : 0)) {}
};

#if SVDSERVE_HAS_WGMMA

// Pair p of a launch (PairGrid's order): consumer c's tile, and where its operands land in a
// stage. A stage's three blocks are the pair's two own blocks and the shared one:
//  - stacked: [upper US | lower US | V];
//  - side by side: [US | left V | right V].
// The second tile may be past the image (the lower tile of an odd last row without side-by-side
// pairs, the right tile of an odd last column pair): its block is not loaded and its consumer
// does not multiply.
struct PairWork {
  const ReconstructTask* task;
  uint32_t slices;
  uint32_t row;  // the upper tile's row tile, or side by side, both tiles'
  uint32_t col;  // both tiles' column tile, or side by side, the left one's
  bool side_by_side;

  __device__ __forceinline__ PairWork(const ReconstructTask* tasks, uint32_t p,
                                      const PairGrid& grid)
      : task(tasks + p / grid.per_task), slices(slices_for(task->rank)) {
    const uint32_t pair = p % grid.per_task;
    side_by_side = pair >= grid.stacked;
    row = side_by_side ? grid.row_tiles - 1 : pair / grid.col_tiles * 2;
    col = side_by_side ? (pair - grid.stacked) * 2 : pair % grid.col_tiles;
  }

  __device__ __forceinline__ uint32_t row_tile(uint32_t consumer) const {
    return side_by_side ? row : row + consumer;
  }
  __device__ __forceinline__ uint32_t col_tile(uint32_t consumer) const {
    return side_by_side ? col + consumer : col;
  }
  __device__ __forceinline__ bool in_image(uint32_t consumer, const PairGrid& grid) const {
    return row_tile(consumer) < grid.row_tiles && col_tile(consumer) < grid.col_tiles;
  }
  // Stage slots (kStepBytes each) of the consumer's US and V blocks, and of its own block: the
  // one no other consumer reads, where it zeroes the values past the rank.
  __device__ __forceinline__ uint32_t us_slot(uint32_t consumer) const {
    return side_by_side ? 0 : consumer;
  }
  __device__ __forceinline__ uint32_t v_slot(uint32_t consumer) const {
    return side_by_side ? 1 + consumer : 2;
  }
  __device__ __forceinline__ uint32_t own_slot(uint32_t consumer) const {
    return side_by_side ? v_slot(consumer) : us_slot(consumer);
  }
};

// The ring: kStages stages, each with a "full" barrier (the producer's arrival, then the copies'
// bytes) and an "empty" one (both consumers' hand-back). Step s uses stage s % kStages for the
// (s / kStages)-th time, whose parity the waits name. Both consumers take every step, in order.
template <uint32_t kStages>
struct Ring {
  unsigned char* stages;
  uint64_t* full;
  uint64_t* empty;

  __device__ __forceinline__ unsigned char* at(uint32_t stage) const {
    return stages + stage * kStageBytes;
  }
};

using detail::RingPosition;

// The producer: each pair's k-steps, channel by channel, into the ring, each stage once both
// consumers handed it back. A tile past the image gets no block of its own (its consumer does not
// multiply).
// kFirstHalves: every task's rank is 8 or less, so each step copies its blocks' first halves.
template <uint32_t kChannels, uint32_t kStages, bool kFirstHalves>
__device__ __forceinline__ void produce(const Ring<kStages>& ring, const ReconstructTask* tasks,
                                        uint32_t pairs, const ImageShape& shape,
                                        const PairGrid& grid) {
  constexpr uint32_t kCopyBytes = kFirstHalves ? kHalfStepBytes : kStepBytes;
  constexpr uint32_t kSlots = 3;
  RingPosition<kStages> position;
#pragma unroll 1
  for (uint32_t p = blockIdx.x; p < pairs; p += gridDim.x) {
    const PairWork work(tasks, p, grid);
    // The caller's contract (fused.hpp): checked before any copy from it, so that the
    // kernel fails without a pixel written from it.
    if (work.task->wgmma_operands == nullptr) __trap();
    const auto* operands = static_cast<const unsigned char*>(work.task->wgmma_operands);
    const Layout layout{shape, work.task->rank_kept};
    // Consumer 1's own block, if its tile is past the image (else no slot: kSlots).
    const uint32_t skipped = work.in_image(1, grid) ? kSlots : work.own_slot(1);
    const uint32_t second_row = min(work.row_tile(1), grid.row_tiles - 1);
    const uint32_t second_col = min(work.col_tile(1), grid.col_tiles - 1);
#pragma unroll 1
    for (uint32_t channel = 0; channel < kChannels; ++channel) {
      const unsigned char* const us = operands + layout.us_offset(channel, work.row, 0);
      const unsigned char* const v = operands + layout.v_offset(channel, work.col, 0);
      const unsigned char* const from[kSlots] = {
          us,
          work.side_by_side ? v : operands + layout.us_offset(channel, second_row, 0),
          work.side_by_side ? operands + layout.v_offset(channel, second_col, 0) : v};
#pragma unroll 1
      for (uint32_t slice = 0; slice < work.slices; ++slice, position.advance()) {
        uint64_t* const full = ring.full + position.stage;
        unsigned char* const stage = ring.at(position.stage);
        // A fresh barrier's "previous phase" counts as complete: the first round does not wait.
        detail::wait_barrier(ring.empty + position.stage, position.parity ^ 1U);
        detail::arrive_expecting(full, (skipped == kSlots ? 3 : 2) * kCopyBytes);
        const uint32_t offset = slice * kStepBytes;
#pragma unroll
        for (uint32_t slot = 0; slot < kSlots; ++slot) {
          if (slot != skipped) {
            detail::bulk_load(stage + slot * kStepBytes, from[slot] + offset, kCopyBytes, full);
          }
        }
      }
    }
  }
}

// This warpgroup's 128 threads only (named barrier 1 + consumer; 0 is __syncthreads).
__device__ __forceinline__ void sync_consumer(uint32_t consumer) {
  detail::sync_named_barrier<kWarpgroupThreads>(1 + consumer);
}

// Thread 0 of a consumer hands a stage back for its whole warpgroup, so every warp must have
// waited for the step first. Where the warpgroup multiplied, its warpgroup-wide wgmmas order that;
// where its tile is past the image only the waits run, and a warp delayed by more than a round of
// the ring (other kernels on the SM) waits on a phase that has already turned twice: forever.
template <uint32_t kStages>
__device__ __forceinline__ void hand_back(const Ring<kStages>& ring, uint32_t stage,
                                          uint32_t consumer, bool multiplied) {
  if (!multiplied) sync_consumer(consumer);
  if (threadIdx.x % kWarpgroupThreads == 0) detail::arrive(ring.empty + stage);
}

// Consumer 1 starts stagger_steps() + 1 k-steps behind consumer 0 (named barrier 3: 0 is
// __syncthreads, 1-2 sync_consumer). Why: both consumers take every step of the one ring, so
// started together they drain, round and copy out at the same moments, with the tensor cores and
// the stream idle meanwhile. Apart, one's MMAs run while the other rounds, and the lead holds:
// whichever rounds, the other takes the tensor cores alone.
// The lead is bounded by the ring: the producer cannot refill a stage the follower still holds,
// so the leader waits for it.
// A lead of 3 vs none: 1.18-1.28x at k=16, 0.96-1.05x at k=64, 256; 5: 1.03-1.09x at k=16 (H100).
template <uint32_t kStages>
constexpr uint32_t stagger_steps() {
  // Steps 0..kStages-1 land without any hand-back, so the leader reaches the release alone.
  return std::min<uint32_t>(2, kStages - 1);
}
constexpr uint32_t kStaggerBarrier = 3;

__device__ __forceinline__ void wait_for_the_leader() {
  detail::sync_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

__device__ __forceinline__ void release_the_follower() {
  detail::arrive_named_barrier<kConsumers * kWarpgroupThreads>(kStaggerBarrier);
}

// Zeroes the values of k >= valid (0..15) in one landed block of a stage, a US or a V block (the
// same layout), both parts, both halves: thread `row` of the warpgroup takes its row's (or
// column's) 16 bytes of each (the blocks hold the factors up to rank_kept, the task may ask for
// less; with kFirstHalves the second halves were not copied at all). A product with a zero term
// is zero, so zeroing one factor's block is enough: each consumer zeroes its own (PairWork),
// never one that the other reads. Then visible to the warpgroup's wgmmas (the async proxy), once
// it has synchronised; and, by the same fence and barrier before thread 0 hands the stage back,
// ordered before the producer's next copies into it. compute-sanitizer's racecheck cannot order
// these writes with those copies (.ci/device-check.sh says which hazards it reports). Zeroing in
// registers instead (US from registers on that step) spilled beside the 128 accumulators and ran
// 1.2-1.3x slower at k = 256 (H100).
__device__ __forceinline__ void zero_k_from(unsigned char* block, uint32_t row, uint32_t valid) {
  const uint32_t row_offset = row / 8 * detail::kCoreMatrixBytes + row % 8 * 16;
#pragma unroll
  for (uint32_t half = 0; half < 2; ++half) {
    if (valid >= kHalfDepth * (half + 1)) continue;
    const uint32_t keep = valid > kHalfDepth * half ? valid - kHalfDepth * half : 0;
#pragma unroll
    for (uint32_t part = 0; part < 2; ++part) {
      auto* const values =
          reinterpret_cast<uint16_t*>(block + half * kHalfStepBytes + part * kPartBytes +
                                      row_offset);
      for (uint32_t k = keep; k < kHalfDepth; ++k) values[k] = 0;
    }
  }
  detail::fence_shared_for_wgmma();
}

// The six wgmmas of one k-step from one stage: for each 64-row half of the tile, the three
// products (small terms first, as tensor).
template <bool kFirstHalves>
struct StageOperands {
  uint64_t us_big;
  uint64_t us_small;
  uint64_t v_big;
  uint64_t v_small;

  // With kFirstHalves (the steps copied k 0-7 only) V's descriptors read k 0-7 again for k 8-15
  // (leading byte offset 0): finite values, which meet US's zeros there (zero_k_from), never a
  // stage's older or uninitialised bytes.
  // stages: the ring's first stage, whose first block both sets of descriptors point at;
  // multiply adds the step's stage and the pair's slots (PairWork).
  __device__ __forceinline__ explicit StageOperands(const unsigned char* stages)
      : us_big(descriptor(stages, kHalfStepBytes)),
        us_small(descriptor(stages + kPartBytes, kHalfStepBytes)),
        v_big(descriptor(stages, kFirstHalves ? 0 : kHalfStepBytes)),
        v_small(descriptor(stages + kPartBytes, kFirstHalves ? 0 : kHalfStepBytes)) {}

  // A descriptor's shift (its address field counts 16 bytes) to slot `slot` of stage `stage`.
  __device__ __forceinline__ static uint32_t shift(uint32_t stage, uint32_t slot) {
    return (stage * kStageBytes + slot * kStepBytes) >> 4;
  }

  // kWithBottom: the bottom half holds rows of the image. A template argument, not a branch
  // around the bottom's wgmmas: ptxas serialises wgmmas that a divergent path may skip (C7520).
  // us_shift, v_shift: shift() of the consumer's US and V blocks in this step's stage.
  template <bool kWithBottom>
  __device__ __forceinline__ void multiply(uint32_t us_shift, uint32_t v_shift, bool accumulate,
                                           detail::WgmmaAccumulators& top,
                                           detail::WgmmaAccumulators& bottom) const {
    const uint64_t us = us_shift;
    const uint64_t v = v_shift;
    constexpr uint64_t kBottom = kSecondRowsBytes >> 4;
    detail::fence_wgmma_operands();
    detail::wgmma_f16(top, us_small + us, v_big + v, accumulate);
    detail::wgmma_f16(top, us_big + us, v_small + v, true);
    detail::wgmma_f16(top, us_big + us, v_big + v, true);
    if constexpr (kWithBottom) {
      detail::wgmma_f16(bottom, us_small + us + kBottom, v_big + v, accumulate);
      detail::wgmma_f16(bottom, us_big + us + kBottom, v_small + v, true);
      detail::wgmma_f16(bottom, us_big + us + kBottom, v_big + v, true);
    }
    detail::commit_wgmma_group();
  }

 private:
  __device__ __forceinline__ static uint64_t descriptor(const unsigned char* part,
                                                        uint32_t leading_bytes) {
    return detail::wgmma_descriptor(part, leading_bytes, detail::kCoreMatrixBytes);
  }
};

// Where this thread's accumulators go (wgmma_ptx.cuh's layout): warp w of the warpgroup holds rows
// 16w + g and 16w + g + 8 (g = lane / 4) of each 64-row half, slots 8j + 2t + e (t = lane % 4,
// e = 0, 1), which hold tile columns 8j + 4e + t (V's order in its operands,
// wgmma_column_of): for each (j, e) the row's four threads hold four adjacent pixels, so that a
// warp's byte stores into the pitched staging meet few bank conflicts.
constexpr uint32_t kRowsPerWarp = kWgmmaRows / (kWarpgroupThreads / kWarpSize);

// The tile column of this thread's slot (j, e).
__device__ __forceinline__ uint32_t column_of(uint32_t j, uint32_t e) {
  return 8 * j + 4 * e + threadIdx.x % 4;
}
static_assert(wgmma_column_of(8 * 3 + 2 * 1 + 1) == 8 * 3 + 4 * 1 + 1);  // (j, t, e) = (3, 1, 1)

// Rounds one 64-row half's accumulators into channel `channel` of the staging tile, by the
// conversion instruction (round_to_u8_bits: FADD, F2I), not round_to_u8_packable's three full-
// or half-rate instructions. Why: a consumer rounds while the other's wgmmas run, and the tensor
// cores lose time to every rounding instruction issued beside them (the loop alone loses ~1,200
// cycles a channel with round_to_u8_packable, ~900 with this, none with the drain alone); F2I's
// quarter rate does not matter there. 1.02x at k = 64 from 1024², 1.00-1.02x at k = 256 (H100).
template <typename OutputTile>
__device__ __forceinline__ void round_into_staging(const detail::WgmmaAccumulators& acc,
                                                   const OutputTile& tile, unsigned char* staging,
                                                   uint32_t first_row, uint32_t channel) {
  constexpr uint32_t kChannels = OutputTile::kChannelCount;
#pragma unroll
  for (uint32_t half = 0; half < 2; ++half) {
    unsigned char* const stage_row = tile.staged(staging, first_row + kRowsPerWarp / 2 * half,
                                                 channel);
#pragma unroll
    for (uint32_t j = 0; j < detail::kWgmmaCols / 8; ++j) {
#pragma unroll
      for (uint32_t e = 0; e < 2; ++e) {
        stage_row[column_of(j, e) * kChannels] =
            static_cast<uint8_t>(detail::round_to_u8_bits(acc[4 * j + 2 * half + e]));
      }
    }
  }
}

#endif  // SVDSERVE_HAS_WGMMA

// kFirstHalves: every task's rank is 8 or less (produce, StageOperands).
template <uint32_t kChannels, bool kFirstHalves>
__global__ void __launch_bounds__(kThreads, 1)
    fused_reconstruct_wgmma_kernel(const ReconstructTask* __restrict__ tasks, uint32_t pairs,
                                   uint32_t height, uint32_t width) {
#if SVDSERVE_HAS_WGMMA
  constexpr uint32_t kPitch = pitch<kChannels>();
  constexpr uint32_t kStages = stages<kChannels>();
  using Tile = detail::OutputTile<kTile, kWarpgroupThreads, kChannels, kPitch>;
  extern __shared__ __align__(detail::kStagingAlignment) unsigned char shared[];
  unsigned char* const all_staging = shared + staging_offset(kStages);
  auto* const full =
      reinterpret_cast<uint64_t*>(all_staging + kConsumers * staging_bytes<kChannels>());
  const Ring<kStages> ring{shared, full, full + kStages};
  const ImageShape shape{width, height, kChannels};
  const PairGrid grid(height, width, !kFirstHalves);

  if (threadIdx.x == 0) {
    // The tensor stores' sources (tensor_store.cuh).
    if (detail::shared_address(shared) % detail::kStagingAlignment != 0) __trap();
    for (uint32_t s = 0; s < kStages; ++s) {
      detail::init_barrier(ring.full + s, 1);
      detail::init_barrier(ring.empty + s, kConsumers);
    }
    detail::fence_barrier_init();
  }
  __syncthreads();  // the barriers are initialised; no block barrier after this one

  if (threadIdx.x >= kProducerThread) {
    if (threadIdx.x == kProducerThread) {
      produce<kChannels, kStages, kFirstHalves>(ring, tasks, pairs, shape, grid);
    }
    return;
  }

  const uint32_t consumer = threadIdx.x / kWarpgroupThreads;
  const uint32_t thread = threadIdx.x % kWarpgroupThreads;  // in the warpgroup: a tile row
  unsigned char* const staging = all_staging + consumer * staging_bytes<kChannels>();
  const uint32_t first_row = thread / kWarpSize * kRowsPerWarp + threadIdx.x % kWarpSize / 4;
  const StageOperands<kFirstHalves> operands(ring.stages);
  // Set once (the asm reads them); each channel's first wgmmas then overwrite them.
  detail::WgmmaAccumulators top = {};
  detail::WgmmaAccumulators bottom = {};
  uint32_t step = 0;  // steps taken, for the stagger
  RingPosition<kStages> position;
  uint32_t previous_stage = 0;  // the last step's stage, handed back after the next step's wgmmas
  bool staging_read = false;  // an earlier tile's copy-out may still read the staging
  bool follower_released = consumer != 0;
  const ReconstructTask* acquired = nullptr;  // the task whose map this thread acquired last
  if (consumer == 1) wait_for_the_leader();

#pragma unroll 1
  for (uint32_t p = blockIdx.x; p < pairs; p += gridDim.x) {
    const PairWork work(tasks, p, grid);
    const uint32_t rank = work.task->rank;
    // Else it only takes the steps and hands them back.
    const bool in_image = work.in_image(consumer, grid);
    const uint32_t col_tile = min(work.col_tile(consumer), grid.col_tiles - 1);
    const Tile tile(*work.task, width, min(work.row_tile(consumer), grid.row_tiles - 1), col_tile);
    // Stored by one tensor store where the tile is a whole column of the task's output map, else
    // by the threads' copy-out (or bulk row stores); the same pitched staging either way.
    const bool mapped = work.task->out_map_encoded != 0 && tile.col0 + kTile <= width;
    // Once per task and thread, not per tile (at 4096², k = 16 and 64: 1.04x; H100).
    if (mapped && in_image && thread == 0 && work.task != acquired) {
      detail::acquire_tensor_map(&work.task->out_map);
      acquired = work.task;
    }
    // Else the tile's bottom 64 rows hold none of the image (the last row tile at 1920 x 1080, 56
    // of its 128 rows in the image): neither multiplied nor rounded.
    const bool bottom_in_image = tile.row0 + kWgmmaRows < height;
#pragma unroll 1
    for (uint32_t channel = 0; channel < kChannels; ++channel) {
#pragma unroll 1
      for (uint32_t slice = 0; slice < work.slices; ++slice, ++step, position.advance()) {
        const uint32_t stage = position.stage;
        detail::wait_barrier(ring.full + stage, position.parity);
        const uint32_t k0 = slice * kDepth;
        if (in_image) {
          if (kFirstHalves || rank < k0 + kDepth) {  // the channel's one step past the rank
            zero_k_from(ring.at(stage) + work.own_slot(consumer) * kStepBytes, thread, rank - k0);
            sync_consumer(consumer);
          }
          const uint32_t us_shift = operands.shift(stage, work.us_slot(consumer));
          const uint32_t v_shift = operands.shift(stage, work.v_slot(consumer));
          if (bottom_in_image) {
            operands.template multiply<true>(us_shift, v_shift, slice != 0, top, bottom);
          } else {
            operands.template multiply<false>(us_shift, v_shift, slice != 0, top, bottom);
          }
        }
        if (!follower_released && step == stagger_steps<kStages>()) {
          release_the_follower();
          follower_released = true;
        }
        if (slice != 0) {
          detail::wait_wgmma<1>();  // the previous step's wgmmas: its stage is free
          hand_back(ring, previous_stage, consumer, in_image);
        }
        previous_stage = stage;
      }
      detail::wait_wgmma<0>();
      hand_back(ring, previous_stage, consumer, in_image);
      detail::pin_accumulators(top);
      detail::pin_accumulators(bottom);

      if (!in_image) continue;
      if (channel == 0 && staging_read) {  // the earlier tile's copy-out is done with it
        detail::wait_bulk_reads();
        sync_consumer(consumer);
        staging_read = false;
      }
      round_into_staging(top, tile, staging, first_row, channel);
      if (bottom_in_image) {
        round_into_staging(bottom, tile, staging, kWgmmaRows + first_row, channel);
      }
    }
    if (!in_image) continue;
    if (mapped) {
      detail::fence_shared_for_bulk_copy();
      sync_consumer(consumer);
      if (thread == 0) {
        detail::tensor_store_tile(&work.task->out_map, col_tile, tile.row0, staging);
      }
    } else {
      tile.copy_out_async(staging, height, width, thread, [&] { sync_consumer(consumer); });
    }
    staging_read = true;
  }
  if (!follower_released) release_the_follower();  // fewer steps than the stagger
  detail::wait_bulk_reads();  // before the block's shared memory goes
#else
  __trap();  // Wgmma::can_implement holds on sm_90a devices only
#endif
}

}  // namespace

namespace {

// Writes whether the code the device runs was compiled with wgmma: not where it runs PTX built
// for compute_90 (CUDA_FORCE_PTX_JIT, or a build without sm_90a), where the kernel would trap.
__global__ void wgmma_compiled_kernel(int* has_wgmma) { *has_wgmma = SVDSERVE_HAS_WGMMA; }

bool device_runs_wgmma(int device) noexcept {
  int major = 0;
  int minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
      major != 9 || minor != 0) {  // sm_90a code runs on compute 9.0 only
    return false;
  }
  int* flag = nullptr;
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed probe must not fail the next launch check
    return false;
  }
  int has_wgmma = 0;
  wgmma_compiled_kernel<<<1, 1>>>(flag);
  const bool ran = cudaGetLastError() == cudaSuccess &&
                   cudaMemcpy(&has_wgmma, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  const bool freed = cudaFree(flag) == cudaSuccess;
  (void)cudaGetLastError();
  return ran && freed && has_wgmma == 1;
}

}  // namespace

bool fused_wgmma_supported() noexcept {
  // Probed once per device (a launch and a copy), then read on every launch.
  constexpr int kMaxDevices = 64;
  enum : int { kUnknown, kNo, kYes };
  static std::array<std::atomic<int>, kMaxDevices> known{};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return false;
  int state = known[device].load(std::memory_order_acquire);
  if (state == kUnknown) {
    state = device_runs_wgmma(device) ? kYes : kNo;
    known[device].store(state, std::memory_order_release);
  }
  return state == kYes;
}

namespace variants {

bool Wgmma::can_implement(const ReconstructLaunch& launch) noexcept {
  return launch.arch == ReconstructArch::sm90a && launch.pixels == OutputPixels::u8 &&
         launch.wgmma_operands;
}

uint32_t Wgmma::tile_rows() noexcept { return kTile; }

void Wgmma::run(const ReconstructTask* tasks_device, uint32_t count, const ImageShape& shape,
                const ReconstructLaunch& launch, StreamView stream) {
  // Up to rank 8 the steps copy k 0-7 only: 0.99-1.05x of the TF32 kernel at ranks 2-8, with
  // whole steps 0.85-0.94x (H100).
  // A kernel of its own, so that its copy sizes and descriptors stay constants in the loop.
  const bool first_halves = launch.max_rank <= kHalfStepMaxRank;
  const uint32_t pairs = PairGrid(shape.height, shape.width, !first_halves).per_task * count;
  if (pairs == 0) return;
  // Persistent: one block per SM, each looping over its pairs of tiles (fewer where there are
  // fewer).
  int device = 0;
  int sms = 0;
  SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
  SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const uint32_t blocks = std::min(pairs, static_cast<uint32_t>(sms));
  dispatch_channels(shape.channels, [&](auto channels) {
    constexpr uint32_t kChannels = decltype(channels)::value;
    const auto kernel = first_halves ? fused_reconstruct_wgmma_kernel<kChannels, true>
                                     : fused_reconstruct_wgmma_kernel<kChannels, false>;
    SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(shared_bytes<kChannels>())));
    kernel<<<blocks, kThreads, shared_bytes<kChannels>(), stream.value()>>>(
        tasks_device, pairs, shape.height, shape.width);
    SVDSERVE_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace variants
}  // namespace svdserve::gpu
