// Fused reconstruction on Hopper's asynchronous warpgroup MMA (FusedVariant::wgmma), u8 output
// only: the tensor kernel's tiles and three products per term (big*big + big*small + small*big,
// see reconstruct_fused_tensor.cu for the accuracy), but in FP16 with FP32 accumulators on
// m64n128k16 wgmmas: twice TF32's rate on two thirds of its operand bytes, for parts of the same
// 11 bits (FP16's range is handled by the operands' scale, wgmma_operands.hpp). Fed by the copy
// engine, it reads the factors from their wgmma operands, written once when the image is
// decomposed, not from the canonical layout:
//  - each k-step's operands (the tile's 128 rows of US, FP32, and 128 columns of V, already split
//    into FP16 big and small parts in wgmma's layout) arrive in a ring of shared-memory stages
//    by two bulk copies that thread 0 issues up to a ring's length ahead; a stage's barrier
//    (mbarrier) says when its bytes have landed. No thread loads a factor from global memory and
//    none writes an operand to shared memory: the only proxy fence is the refilling thread's;
//  - US, the A operand, reaches the wgmmas in registers (wgmma's register-A form): each thread
//    reads its 8 values of the step from the stage with two 16-byte loads and splits them;
//  - each warpgroup (4 warps) hands its 64 x 128 half of the tile to the tensor cores as three
//    wgmmas per k-step of 16 and waits for the previous k-step's only (two sets of US registers),
//    and for all of them at a channel's end, where it rounds its accumulators into the staging
//    tile; the first wgmma of a channel does not add to the accumulators;
//  - a stage is refilled once every warp is done with it: a block barrier every other k-step
//    (every k-step when the ring is short), after which thread 0 refills every free stage.
// Block = 2 warpgroups, 2 blocks per SM, 128 x 128 pixel tiles (all channels of one task each):
// one tile per block at small ranks; from rank 32, as many blocks as fit on the GPU at once,
// each looping over tiles t, t + gridDim.x, ..., its ring running on into the next tile while
// this one's last steps are multiplied and its pixels stored (up to 4 channels; the ring is as
// long as two blocks per SM allow: 5 stages of 16 KiB with 1 channel, 4 with 2, 3 with 3, 2 with
// 4). The staging tile and its copy-out are tile128's (reconstruct_tile_io.cuh, OutputTile).
//
// Measured on the H100 (docs/PERFORMANCE.md): FP16 instead of TF32 (session 14) 1.23-1.32x
// faster at k = 64, 1.35-1.50x at 256; the copy engine's ring (sessions 8 and 9) 1.06-1.19x faster
// than session 7's kernel at k = 16, 1.24-1.38x from k = 64. That one loaded the factors from
// their canonical layout into registers and split V into shared memory itself, with a proxy fence
// per k-step (on sm_90 a MEMBAR, which also waits for the loads in flight).
// Slower, measured: ring refills gated by per-stage "empty" barriers instead of the block
// barrier (thread 0 waiting on them, or polling them: 0.44 ms against 0.31-0.34); a producer warp
// of its own (2 blocks of 9 warps per SM leave 96 registers a thread: wgmma serialised; 1 block
// per SM: 1.13x slower; with US from shared memory too, 16 KiB stages: 3 of them, 1.11x slower);
// refills split between two threads (1.07x slower).
// sm_90a only (H100, H200); launch_fused_reconstruct runs tensor elsewhere.

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/gpu/bulk_load.cuh"
#include "kernels/gpu/cuda_check.hpp"
#include "kernels/gpu/reconstruct_fused_variants.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"
#include "kernels/gpu/reconstruct_tile_pipeline.cuh"
#include "kernels/gpu/wgmma_operands.hpp"
#include "kernels/gpu/wgmma.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;
using detail::kWgmmaRows;
using Layout = WgmmaOperandLayout;

constexpr uint32_t kTile = Layout::kTile;
constexpr uint32_t kThreads = 256;  // two warpgroups: tile rows 0-63 and 64-127
static_assert(kTile == 2 * kWgmmaRows);

// A stage holds one k-step's operands as they arrive (wgmma_operands.hpp): the US block, then
// V's big and small parts.
constexpr uint32_t kUsBytes = Layout::kUsStepBytes;
constexpr uint32_t kStageBytes = kUsBytes + Layout::kVStepBytes;
static_assert(kStageBytes % kStoreBytes == 0);  // the staging tile after the stages: aligned

constexpr int kMinBlocksPerSm = 2;
// A launch whose ranks are all 8 or less needs k 0-7 of each step only.
constexpr uint32_t kHalfStepMaxRank = Layout::kDepth / 2;
constexpr uint32_t kLoopOverTilesFromRank = 32;

template <uint32_t kChannels>
constexpr uint32_t pitch() {
  return detail::staging_pitch<uint8_t, kChannels, kTile>();
}

// H100 / H200: 228 KiB of shared memory per SM, 1 KiB of it reserved per block.
constexpr std::size_t kSharedBytesPerSm = 228 * 1024;
constexpr std::size_t kReservedBytesPerBlock = 1024;
constexpr uint32_t kMaxStages = 6;

// Shared memory: the stages, the staging tile, the stages' barriers, then thread 0's place in
// the stream (OperandRing::FillCursor).
constexpr std::size_t kFillCursorBytes = 48;  // OperandRing::FillCursor, 8-byte aligned
template <uint32_t kChannels>
constexpr std::size_t shared_bytes_with(uint32_t stages) {
  return std::size_t{stages} * kStageBytes + std::size_t{kTile} * pitch<kChannels>() +
         std::size_t{stages} * sizeof(uint64_t) + kFillCursorBytes;
}

// As many stages as let two blocks share an SM, up to kMaxStages (3 with 4 channels, 5 with 3).
template <uint32_t kChannels>
constexpr uint32_t stages() {
  uint32_t s = kMaxStages;
  while (kMinBlocksPerSm * (shared_bytes_with<kChannels>(s) + kReservedBytesPerBlock) >
         kSharedBytesPerSm) {
    --s;
  }
  return s;
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return shared_bytes_with<kChannels>(stages<kChannels>());
}

static_assert(stages<1>() == 5 && stages<2>() == 4 && stages<3>() == 3 && stages<4>() == 2);
// Descriptor addresses: 14 bits of 16-byte units.
static_assert(shared_bytes<1>() < (1U << 18) && shared_bytes<2>() < (1U << 18) &&
              shared_bytes<3>() < (1U << 18) && shared_bytes<4>() < (1U << 18));

#if SVDSERVE_HAS_WGMMA

constexpr uint32_t kDepth = Layout::kDepth;  // values of k a step: FP16 wgmma's k16
static_assert(kDepth == detail::kWgmmaF16Depth);

constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kPartBytes = Layout::kVPartBytes;  // the small part after the big one
constexpr uint32_t kValuesPerThread = 8;  // US values of one k-step a thread holds
constexpr uint32_t kRegistersPerThread = 4;  // two halves each
// V's core matrices in a stage (wgmma_operands.hpp): the next 8 values of k are in the block's
// second half, the next 8 columns a core matrix further.
constexpr uint32_t kLeadingBytes = Layout::kHalfStepBytes;
constexpr uint32_t kStrideBytes = detail::kCoreMatrixBytes;
static_assert(kUsBytes == Layout::kVStepBytes);  // one copy size serves both operands

// This thread's US operand of one k-step, split: its 8 values in the register-A layout
// (wgmma_f16), as big and small FP16 parts, two values a register.
struct UsFragment {
  uint32_t big[kRegistersPerThread];
  uint32_t small[kRegistersPerThread];

  // From the stage's US block (this thread's 16 bytes of each half); values at k >= rank are
  // zero (the block holds them up to rank_kept; a half not copied holds older bytes): k0 is the
  // step's first k.
  __device__ __forceinline__ void read(const unsigned char* stage, uint32_t k0, uint32_t rank) {
    constexpr uint32_t kHalfVectors = Layout::kHalfStepBytes / sizeof(float4);
    const float4 lo = reinterpret_cast<const float4*>(stage)[threadIdx.x];
    const float4 hi = reinterpret_cast<const float4*>(stage)[kHalfVectors + threadIdx.x];
    float values[kValuesPerThread] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const uint32_t k = k0 + 2 * (threadIdx.x % 4);  // value i at k + i % 2 + 8 (i / 4)
#pragma unroll
    for (uint32_t i = 0; i < kValuesPerThread; ++i) {
      if (k + i % 2 + 8 * (i / 4) >= rank) values[i] = 0.0F;
    }
#pragma unroll
    for (uint32_t r = 0; r < kRegistersPerThread; ++r) {
      const detail::SplitF16x2 parts = detail::split_f16x2(values[2 * r], values[2 * r + 1]);
      big[r] = parts.big;
      small[r] = parts.small;
    }
  }
};

// Tile t of a launch: column tile fastest, then row tile, then task.
struct TileIndex {
  uint32_t task;
  uint32_t row;
  uint32_t col;

  __device__ __forceinline__ TileIndex(uint32_t t, uint32_t row_tiles, uint32_t col_tiles)
      : task(t / (row_tiles * col_tiles)), row(t / col_tiles % row_tiles), col(t % col_tiles) {}
};

// k-steps per channel of a task: at least one, so that rank 0 gives zeros.
__device__ __forceinline__ uint32_t slices_for(uint32_t rank) {
  return max(1U, (rank + kDepth - 1) / kDepth);
}

// A place in the block's stream of k-steps (its tiles' steps one after the other, channel by
// channel): `step` counts them all; step s uses stage s % kStages for the (s / kStages)-th time,
// whose parity is `phase`.
struct StepCursor {
  uint32_t step = 0;
  uint32_t channel = 0;
  uint32_t slice = 0;
  uint32_t stage = 0;
  uint32_t phase = 0;

  template <uint32_t kStages>
  __device__ __forceinline__ void advance(uint32_t slices) {
    ++step;
    if (++slice == slices) {
      slice = 0;
      ++channel;
    }
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1U;
    }
  }
};

// Where the copies of one tile start: its first step's US and V blocks, how far to skip from the
// block after a channel's last to the next channel's first, and the steps per channel.
struct TilePlan {
  const unsigned char* us;
  const unsigned char* v;
  // 32-bit (64-bit skips made the kernel 1.05-1.16x slower, measured): write_wgmma_operands
  // refuses a layout whose channel's blocks pass 4 GiB.
  uint32_t us_skip;
  uint32_t v_skip;
  uint32_t slices;
  uint32_t tile;  // tiles: none
};

// The ring the operands stream through. Thread 0 fills a stage with two bulk copies (its
// barrier's phase completes when the bytes have landed), once the block's threads are past a
// block barrier that follows their last use of the stage; it runs on into the block's next tile
// while this one's last steps are multiplied and its pixels stored.
// A refill holds up thread 0's warpgroup (measured: splitting the refills between two threads,
// or looking the task up at every copy, made the kernel slower), so it is kept to a few shared
// loads: thread 0's place in the stream lives in shared memory (FillCursor), with the tile's
// copy addresses, worked out once per tile (TilePlan).
// kFirstHalves: every task's rank is 8 or less, so each step copies its blocks' first halves
// (k 0-7) only.
template <uint32_t kStages, bool kFirstHalves>
class OperandRing {
 public:
  struct FillCursor {
    TilePlan plan;  // of the tile being filled
    uint32_t channel;
    uint32_t slice;
    uint32_t step;  // the stream's next step to fill
  };
  __device__ __forceinline__ OperandRing(unsigned char* stages, uint64_t* barriers,
                                         FillCursor* cursor, const ReconstructTask* tasks,
                                         uint32_t tiles, const ImageShape& shape)
      : stages_(stages),
        landed_(barriers),
        cursor_(cursor),
        tasks_(tasks),
        tiles_(tiles),
        shape_(shape) {}

  // Thread 0, before the block's first barrier: the barriers, and the first stages' copies.
  __device__ __forceinline__ void start() {
    for (uint32_t s = 0; s < kStages; ++s) detail::init_barrier(landed_ + s, 1);
    detail::fence_barrier_init();
    *cursor_ = {plan(blockIdx.x), 0, 0, 0};
    fill_until(kStages);
  }

  // Thread 0, after a block barrier that every thread reached with the stream's steps
  // 0 .. done - 1 finished (their wgmmas waited for): their stages are free.
  __device__ __forceinline__ void fill_until(uint32_t done_plus_stages) {
    FillCursor c = *cursor_;
    while (c.plan.tile < tiles_ && c.step < done_plus_stages) {
      const uint32_t stage_index = c.step % kStages;
      unsigned char* const stage = stages_ + stage_index * kStageBytes;
      uint64_t* const landed = landed_ + stage_index;
      constexpr uint32_t kCopyBytes = kFirstHalves ? Layout::kHalfStepBytes : kUsBytes;
      detail::arrive_expecting(landed, 2 * kCopyBytes);
      detail::bulk_load(stage, c.plan.us, kCopyBytes, landed);
      detail::bulk_load(stage + kUsBytes, c.plan.v, kCopyBytes, landed);
      ++c.step;
      c.plan.us += kUsBytes;
      c.plan.v += Layout::kVStepBytes;
      if (++c.slice == c.plan.slices) {
        c.slice = 0;
        c.plan.us += c.plan.us_skip;
        c.plan.v += c.plan.v_skip;
        if (++c.channel == shape_.channels) {
          c.channel = 0;
          c.plan = plan(c.plan.tile + gridDim.x);
        }
      }
    }
    *cursor_ = c;
  }

  __device__ __forceinline__ void wait_landed(const StepCursor& at) const {
    detail::wait_barrier(landed_ + at.stage, at.phase);
  }

 private:
  __device__ __forceinline__ TilePlan plan(uint32_t t) const {
    TilePlan p{};
    p.tile = min(t, tiles_);
    if (t >= tiles_) return p;
    const uint32_t row_tiles = (shape_.height + kTile - 1) / kTile;
    const uint32_t col_tiles = (shape_.width + kTile - 1) / kTile;
    const TileIndex at(t, row_tiles, col_tiles);
    const ReconstructTask& task = tasks_[at.task];
    const auto* operands = static_cast<const unsigned char*>(task.wgmma_operands);
    const Layout layout{shape_, task.rank_kept};
    p.slices = slices_for(task.rank);
    p.us = operands + layout.us_offset(0, at.row, 0);
    p.v = operands + layout.v_offset(0, at.col, 0);
    p.us_skip = static_cast<uint32_t>(layout.us_offset(1, at.row, 0) -
                                      layout.us_offset(0, at.row, p.slices));
    p.v_skip = static_cast<uint32_t>(layout.v_offset(1, at.col, 0) -
                                     layout.v_offset(0, at.col, p.slices));
    return p;
  }

  unsigned char* stages_;
  uint64_t* landed_;
  FillCursor* cursor_;
  const ReconstructTask* tasks_;
  uint32_t tiles_;
  ImageShape shape_;
};

// The descriptors of V's parts in stage 0; stage s's are kStageBytes * s further (the start
// address is the descriptor's low field, in 16-byte units). With kFirstHalves (the steps copied
// k 0-7 only) they read k 0-7 again for k 8-15 (leading byte offset 0): finite values, which meet
// US's zeros there, never a stage's older or uninitialised bytes.
template <bool kFirstHalves>
struct StageOperands {
  uint64_t v_big;
  uint64_t v_small;

  __device__ __forceinline__ explicit StageOperands(const unsigned char* stage0)
      : v_big(descriptor(stage0 + kUsBytes)), v_small(descriptor(stage0 + kUsBytes + kPartBytes)) {}

  // The three wgmmas of one k-step from stage `stage` (small terms first, as tensor).
  __device__ __forceinline__ void multiply(uint32_t stage, const UsFragment& us, bool accumulate,
                                           detail::WgmmaAccumulators& acc) const {
    const uint64_t shift = uint64_t{stage} * (kStageBytes >> 4);
    detail::fence_wgmma_operands();
    detail::wgmma_f16(acc, us.small, v_big + shift, accumulate);
    detail::wgmma_f16(acc, us.big, v_small + shift, true);
    detail::wgmma_f16(acc, us.big, v_big + shift, true);
    detail::commit_wgmma_group();
  }

 private:
  __device__ __forceinline__ static uint64_t descriptor(const unsigned char* part) {
    return detail::wgmma_descriptor(part, kFirstHalves ? 0 : kLeadingBytes, kStrideBytes);
  }
};

#endif  // SVDSERVE_HAS_WGMMA

// kFirstHalves: every task's rank is 8 or less (OperandRing, StageOperands).
template <uint32_t kChannels, bool kFirstHalves>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_wgmma_kernel(const ReconstructTask* __restrict__ tasks, uint32_t tiles,
                                   uint32_t height, uint32_t width) {
#if SVDSERVE_HAS_WGMMA
  constexpr uint32_t kPitch = pitch<kChannels>();
  constexpr uint32_t kStages = stages<kChannels>();
  // A barrier every other step saves half of them but leaves the ring a step shorter: measured
  // faster with 5 or more stages, slower with 3 (4 channels). It needs 4 or more: a refill
  // covers the reads of the two steps up to the next one.
  constexpr bool kRefillEveryStep = kStages < 5;
  static_assert(kRefillEveryStep || kStages >= 4);
  using Ring = OperandRing<kStages, kFirstHalves>;
  static_assert(sizeof(typename Ring::FillCursor) <= kFillCursorBytes);
  extern __shared__ __align__(128) unsigned char shared[];
  unsigned char* const staging = shared + std::size_t{kStages} * kStageBytes;
  auto* const barriers = reinterpret_cast<uint64_t*>(staging + std::size_t{kTile} * kPitch);
  auto* const fill_cursor = reinterpret_cast<typename Ring::FillCursor*>(barriers + kStages);
  const uint32_t warpgroup = threadIdx.x / detail::kWarpgroupThreads;
  const uint32_t lane = threadIdx.x % kWarpSize;
  // The accumulator layout (wgmma.cuh): warp w of the warpgroup holds rows 16w + g and
  // 16w + g + 8 (g = lane / 4), columns 8j + 2t and 8j + 2t + 1 (t = lane % 4).
  constexpr uint32_t kRowsPerWarp = kWgmmaRows / (detail::kWarpgroupThreads / kWarpSize);
  const uint32_t first_row = warpgroup * kWgmmaRows +
                             threadIdx.x % detail::kWarpgroupThreads / kWarpSize * kRowsPerWarp +
                             lane / 4;
  const uint32_t first_col = 2 * (lane % 4);
  const uint32_t row_tiles = (height + kTile - 1) / kTile;
  const uint32_t col_tiles = (width + kTile - 1) / kTile;

  const StageOperands<kFirstHalves> operands(shared);
  Ring ring(shared, barriers, fill_cursor, tasks, tiles, {width, height, kChannels});
  if (threadIdx.x == 0) ring.start();
  __syncthreads();  // the barriers are initialised

  // Set once (the asm reads them); each channel's first wgmma then overwrites them.
  detail::WgmmaAccumulators acc = {};
  StepCursor at;  // the stream's next step
  for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const TileIndex tile_index(t, row_tiles, col_tiles);
    const ReconstructTask& task = tasks[tile_index.task];
    // The caller's contract (reconstruct.hpp). Checked here, not where thread 0 plans the tile's
    // copies: a trap on that path made the whole kernel 1.1-1.2x slower (measured, session 9).
    // Thread 0 may have issued this tile's first copies already: a null may then surface as an
    // illegal address instead; either way the kernel fails and no pixel is written from it.
    if (task.wgmma_operands == nullptr) __trap();
    const detail::OutputTile<kTile, kThreads, kChannels, kPitch> tile(task, width, tile_index.row,
                                                                      tile_index.col);
    const uint32_t rank = task.rank;
    const uint32_t slices = slices_for(rank);

    // After the channel's last k-step: its accumulators rounded into the staging tile.
    const auto finish_channel = [&](uint32_t channel) {
#pragma unroll
      for (uint32_t half = 0; half < 2; ++half) {
        unsigned char* const stage_row =
            tile.staged(staging, first_row + kRowsPerWarp / 2 * half, channel);
#pragma unroll
        for (uint32_t j = 0; j < detail::kWgmmaCols / 8; ++j) {
#pragma unroll
          for (uint32_t e = 0; e < 2; ++e) {
            const uint32_t col = 8 * j + first_col + e;
            // STS.U8 stores the low byte; round_to_u8_packable leaves it there.
            stage_row[col * kChannels] =
                static_cast<uint8_t>(detail::round_to_u8_packable(acc[4 * j + 2 * half + e]));
          }
        }
      }
    };
    // One k-step (`at`): its wgmmas start on `us` (read from its stage the step before); once
    // the previous step's wgmmas are done (at a channel's end: all of them, and the channel
    // rounded into the staging tile), the block barrier if `refill` (past it, every thread is
    // done with the steps before the one just issued: thread 0 refills their stages), and the
    // next step's US is read into `next_us` once its stage has landed.
    const auto run_step = [&](const UsFragment& us, UsFragment& next_us, bool refill) {
      operands.multiply(at.stage, us, at.slice != 0, acc);
      const uint32_t channel = at.channel;
      at.template advance<kStages>(slices);
      if (at.slice == 0) {  // this was the channel's last step
        detail::wait_wgmma<0>();
        detail::pin_accumulators(acc);
        finish_channel(channel);
      } else {
        detail::wait_wgmma<1>();  // the previous step's wgmmas: its stage and registers are free
      }
      if (refill) {
        __syncthreads();
        if (threadIdx.x == 0) {
          // The threads' generic loads of the freed stages' US before the copy engine's writes
          // into them (a write after read across proxies; the loads are complete, their values
          // went into waited wgmmas, but the memory model asks for the fence on the path).
          detail::fence_shared_for_bulk_copy();
          ring.fill_until(at.step - 1 + kStages);
        }
      }
      if (at.channel < kChannels) {
        ring.wait_landed(at);
        next_us.read(shared + at.stage * kStageBytes, at.slice * kDepth, rank);
      }
    };

    at.channel = 0;
    UsFragment even_us;  // the US of the even steps of the tile, split
    UsFragment odd_us;
    ring.wait_landed(at);
    even_us.read(shared + at.stage * kStageBytes, 0, rank);
#pragma unroll 1
    while (at.channel < kChannels) {
      run_step(even_us, odd_us, kRefillEveryStep);
      if (at.channel < kChannels) run_step(odd_us, even_us, true);
    }
    // Every group is complete already (the last step waited for all); saying so keeps ptxas
    // from putting a full wait inside the loop, which it cannot prove empty at the loop's exit.
    detail::wait_wgmma<0>();

    __syncthreads();  // the staging tile is complete, and every step of the tile done
    if (threadIdx.x == 0) {
      detail::fence_shared_for_bulk_copy();
      ring.fill_until(at.step + kStages);
    }
    tile.copy_out(staging, height, width);
    __syncthreads();  // the staging tile is read: the next tile may write it
  }
#else
  __trap();  // launch_fused_reconstruct launches this kernel on sm_90 devices only
#endif
}

}  // namespace

uint32_t fused_wgmma_rows() noexcept { return kTile; }

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
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) return false;
  int has_wgmma = 0;
  wgmma_compiled_kernel<<<1, 1>>>(flag);
  const bool ran = cudaGetLastError() == cudaSuccess &&
                   cudaMemcpy(&has_wgmma, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  const bool freed = cudaFree(flag) == cudaSuccess;
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

void launch_fused_wgmma_u8(const ReconstructTask* tasks_device, uint32_t count,
                           const ImageShape& shape, uint32_t max_rank, StreamView stream) {
  const uint32_t tiles =
      ((shape.width + kTile - 1) / kTile) * ((shape.height + kTile - 1) / kTile) * count;
  if (tiles == 0) return;
  // From kLoopOverTilesFromRank, as many blocks as stay resident together, each looping over
  // tiles (its ring runs on into the next tile while this one is stored: measured 1.04-1.08x
  // faster at rank 256, 1.02-1.07x at 64; docs/PERFORMANCE.md, session 9); below it, a block
  // per tile (looping measured equal or up to 6 % slower at ranks 8 to 24).
  uint32_t blocks = tiles;
  if (max_rank >= kLoopOverTilesFromRank) {
    int device = 0;
    int sms = 0;
    SVDSERVE_CUDA_CHECK(cudaGetDevice(&device));
    SVDSERVE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    blocks = std::min(tiles, static_cast<uint32_t>(kMinBlocksPerSm * sms));
  }
  // Up to rank 8 the steps copy k 0-7 only (wgmma_operands.hpp): 0.99-1.05x of session 13's TF32
  // kernel at ranks 2-8 instead of 0.85-0.94x with whole steps (docs/PERFORMANCE.md, session 14).
  // A kernel of its own, so that its copy sizes and descriptors stay constants in the loop.
  const bool first_halves = max_rank <= kHalfStepMaxRank;
  dispatch_channels(shape.channels, [&](auto channels) {
    constexpr uint32_t kChannels = decltype(channels)::value;
    const auto kernel = first_halves ? fused_reconstruct_wgmma_kernel<kChannels, true>
                                     : fused_reconstruct_wgmma_kernel<kChannels, false>;
    SVDSERVE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(shared_bytes<kChannels>())));
    kernel<<<blocks, kThreads, shared_bytes<kChannels>(), stream.value()>>>(
        tasks_device, tiles, shape.height, shape.width);
    SVDSERVE_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace svdserve::gpu
