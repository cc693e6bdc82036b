// Fused reconstruction on Hopper's asynchronous warpgroup MMA (FusedVariant::wgmma), u8 output
// only: the tensor kernel's tiles and arithmetic (3xTF32: big*big + big*small + small*big, see
// reconstruct_fused_tensor.cu for the accuracy) on wgmma instead of mma.sync. The tensor
// kernel's warps load and split every MMA operand from shared memory right before its mma.sync
// and wait for it. Here:
//  - US, the A operand, stays in registers (wgmma's register-A form): each thread loads its own
//    4 values of a k-step from global memory and splits them into big and small parts there;
//  - V, the B operand, is split once, when its slice is written to shared memory, into a big and
//    a small slice, laid out as wgmma reads them (wgmma_tf32.cuh): K-major core matrices;
//  - each warpgroup (4 warps) hands its 64 x 128 half of the tile to the tensor cores as three
//    wgmmas per k-step of 8 and goes on writing the next slice while they run; it waits for the
//    previous k-step's wgmmas only (three slice buffers, two sets of US registers), and for all
//    of them at a channel's end, where it rounds its accumulators into the staging tile;
//  - each k-step's global loads are issued one k-step before their use, right after that step's
//    proxy fence (see run_step: on sm_90 the fence also waits for loads in flight);
//  - the first wgmma of a channel does not add to the accumulators (no zeroing between channels).
// Block = one 128 x 128 pixel tile of one task (blockIdx.z), all channels, 2 warpgroups, 2 blocks
// per SM (up to 4 channels); the staging tile and its copy-out are tile128's
// (reconstruct_tile_io.cuh, OutputTile).
//
// On the H100 it ties tensor at ranks that are multiples of 16 (tensor's slice depth) and is
// faster at the others from 8 on (1.05-1.34x), with 1, 3 and 4 channels, but reaches only 42-57 %
// of its floor at the wgmma peak (docs/PERFORMANCE.md). Measured there (session 7): US in
// registers (before, US slices went through shared memory as V's do) took a third of the
// shared-memory traffic away at the same speed, and its smaller footprint (75 KB a block instead
// of 99 KB with 3 channels) gives 4 channels two blocks per SM; without the global loads the
// kernel runs 1.7x faster, and the loads after the fence gained 6-12 %; loads by the copy engine
// (512-byte bulk copies), by one warpgroup for both, or by a ninth loader warp were all slower.
// sm_90a only (H100, H200); launch_fused_reconstruct runs tensor elsewhere.

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels/gpu/reconstruct_fused_variants.hpp"
#include "kernels/gpu/reconstruct_tile_io.cuh"
#include "kernels/gpu/reconstruct_tile_pipeline.cuh"
#include "kernels/gpu/tf32_mma.cuh"
#include "kernels/gpu/wgmma_tf32.cuh"

namespace svdserve::gpu {
namespace {

using detail::kStoreBytes;
using detail::kWgmmaDepth;
using detail::kWgmmaRows;

constexpr uint32_t kTile = 128;
constexpr uint32_t kThreads = 256;  // two warpgroups: tile rows 0-63 and 64-127
constexpr uint32_t kStages = 3;  // slice buffers: one read by the running wgmmas, one by the
                                 // previous (perhaps still running), one being written
constexpr uint32_t kValuesPerChunk = 4;  // TF32 values of k in one 16-byte core-matrix row

// One part of a slice (the big or the small halves of V's 128 columns, k0 to k0 + 7), K-major:
// 16 groups of 8 columns, each two core matrices (k0..k0+3, k0+4..k0+7). US needs no slices: its
// values reach the wgmmas in registers.
constexpr uint32_t kPartBytes = kTile * kWgmmaDepth * sizeof(float);
enum Part : uint32_t { kVBig, kVSmall, kParts };
constexpr uint32_t kStageBytes = kParts * kPartBytes;
constexpr std::size_t kStagingOffset = std::size_t{kStages} * kStageBytes;
static_assert(kStagingOffset % kStoreBytes == 0);
static_assert(kTile * kWgmmaDepth / kValuesPerChunk == kThreads);  // a chunk per thread and part

constexpr int kMinBlocksPerSm = 2;

template <uint32_t kChannels>
constexpr uint32_t pitch() {
  return detail::staging_pitch<uint8_t, kChannels, kTile>();
}

template <uint32_t kChannels>
constexpr std::size_t shared_bytes() {
  return kStagingOffset + std::size_t{kTile} * pitch<kChannels>();
}

// H100 / H200: 228 KiB of shared memory per SM, 1 KiB of it reserved per block.
constexpr std::size_t kSharedBytesPerSm = 228 * 1024;
constexpr std::size_t kReservedBytesPerBlock = 1024;
static_assert(kMinBlocksPerSm * (shared_bytes<4>() + kReservedBytesPerBlock) <= kSharedBytesPerSm);
static_assert(shared_bytes<4>() < (1U << 18));  // descriptor addresses: 14 bits of 16-byte units

#if SVDSERVE_HAS_WGMMA

using detail::kWarpgroupThreads;
constexpr uint32_t kWarpSize = 32;
constexpr uint32_t kRowsPerWarp = kWgmmaRows / (kWarpgroupThreads / kWarpSize);
constexpr uint32_t kFragmentRowGap = kRowsPerWarp / 2;  // a[1] and a[3]: 8 rows further
constexpr uint32_t kFragmentKGap = kWgmmaDepth / 2;     // a[2] and a[3]: 4 values of k further
constexpr uint32_t kLeadingBytes = detail::kKStepLeadingBytes;  // next 4 values of k
constexpr uint32_t kStrideBytes = detail::kKStepStrideBytes;    // next 8 columns

// This thread's US operand of one k-step, split: its 4 values in the register-A layout
// (wgmma_tf32), as big and small TF32 parts.
struct UsFragment {
  uint32_t big[kValuesPerChunk];
  uint32_t small[kValuesPerChunk];
};

// One thread's share of a k-step, loaded from global memory: its US fragment (4 values) and one
// column of V (tile column threadIdx % 128) at 4 consecutive k (chunk = threadIdx / 128); zero
// past the image edge and for k >= rank.
struct StepLoad {
  float us[kValuesPerChunk];
  float v[kValuesPerChunk];

  // V split into big and small parts and written where wgmma reads them (16 bytes per part; a
  // quarter warp writes 128 contiguous bytes: no bank conflicts).
  __device__ __forceinline__ void store_v(unsigned char* stage) const {
    const uint32_t index = threadIdx.x % kTile;
    const uint32_t offset = index / 8 * kStrideBytes + threadIdx.x / kTile * kLeadingBytes +
                            index % 8 * kStoreBytes;
    uint32_t big[kValuesPerChunk];
    uint32_t small[kValuesPerChunk];
    split(v, big, small);
    *reinterpret_cast<uint4*>(stage + kVBig * kPartBytes + offset) =
        make_uint4(big[0], big[1], big[2], big[3]);
    *reinterpret_cast<uint4*>(stage + kVSmall * kPartBytes + offset) =
        make_uint4(small[0], small[1], small[2], small[3]);
  }

  __device__ __forceinline__ void split_us(UsFragment& fragment) const {
    split(us, fragment.big, fragment.small);
  }

 private:
  __device__ __forceinline__ static void split(const float (&x)[kValuesPerChunk],
                                               uint32_t (&big)[kValuesPerChunk],
                                               uint32_t (&small)[kValuesPerChunk]) {
#pragma unroll
    for (uint32_t i = 0; i < kValuesPerChunk; ++i) {
      const detail::SplitTf32 parts = detail::split_tf32(x[i]);
      big[i] = parts.big;
      small[i] = parts.small;
    }
  }
};

// Reads this thread's share k-step after k-step, channel after channel (the order of the
// k-steps), keeping its place: a pointer add per step instead of the addresses worked out again.
class StepReader {
 public:
  __device__ __forceinline__ StepReader(const ReconstructTask& task, uint32_t slices,
                                        uint32_t us_row, uint32_t col0, uint32_t height,
                                        uint32_t width)
      : task_(task),
        height_(height),
        width_(width),
        us_first_k_(threadIdx.x % 4),
        v_first_k_(threadIdx.x / kTile * kValuesPerChunk),
        us_row_(us_row),
        col_(col0 + threadIdx.x % kTile),
        slices_(slices) {
    start_channel(0);
  }

  __device__ __forceinline__ void read(StepLoad& load) {
    const uint32_t rank = task_.rank;
    const bool row_inside = us_row_ < height_;
    const bool row_below_inside = us_row_ + kFragmentRowGap < height_;
    const bool us_inside = k0_ + us_first_k_ < rank;
    const bool us_later_inside = k0_ + us_first_k_ + kFragmentKGap < rank;
    const float* const us_later = us_ + kFragmentKGap * height_;
    load.us[0] = us_inside && row_inside ? __ldg(us_) : 0.0F;
    load.us[1] = us_inside && row_below_inside ? __ldg(us_ + kFragmentRowGap) : 0.0F;
    load.us[2] = us_later_inside && row_inside ? __ldg(us_later) : 0.0F;
    load.us[3] = us_later_inside && row_below_inside ? __ldg(us_later + kFragmentRowGap) : 0.0F;
#pragma unroll
    for (uint32_t i = 0; i < kValuesPerChunk; ++i) {
      const bool inside = k0_ + v_first_k_ + i < rank && col_ < width_;
      load.v[i] = inside ? __ldg(v_ + i * width_) : 0.0F;
    }
    if (++slice_ == slices_) {
      start_channel(channel_ + 1);
    } else {
      k0_ += kWgmmaDepth;
      us_ += kWgmmaDepth * height_;
      v_ += kWgmmaDepth * width_;
    }
  }

 private:
  // After the last channel this points past the factors; read() is not called again.
  __device__ __forceinline__ void start_channel(uint32_t channel) {
    channel_ = channel;
    slice_ = 0;
    k0_ = 0;
    const detail::ChannelFactors f = detail::channel_factors(task_, channel, height_, width_);
    us_ = f.us + std::size_t{us_first_k_} * height_ + us_row_;
    v_ = f.v + std::size_t{v_first_k_} * width_ + col_;
  }

  const ReconstructTask& task_;
  uint32_t height_;
  uint32_t width_;
  uint32_t us_first_k_;
  uint32_t v_first_k_;
  uint32_t us_row_;
  uint32_t col_;
  uint32_t slices_;
  uint32_t channel_ = 0;
  uint32_t slice_ = 0;
  uint32_t k0_ = 0;
  const float* us_ = nullptr;
  const float* v_ = nullptr;
};

// The descriptors of V's parts in stage 0; stage s's are kStageBytes * s further (the start
// address is the descriptor's low field, in 16-byte units).
struct StageOperands {
  uint64_t v_big;
  uint64_t v_small;

  __device__ __forceinline__ explicit StageOperands(const unsigned char* stage0)
      : v_big(descriptor(stage0 + kVBig * kPartBytes)),
        v_small(descriptor(stage0 + kVSmall * kPartBytes)) {}

  // The three wgmmas of one k-step from stage `stage` (small terms first, as tensor).
  __device__ __forceinline__ void multiply(uint32_t stage, const UsFragment& us, bool accumulate,
                                           detail::WgmmaAccumulators& acc) const {
    const uint64_t shift = uint64_t{stage} * (kStageBytes >> 4);
    detail::fence_wgmma_operands();
    detail::wgmma_tf32(acc, us.small, v_big + shift, accumulate);
    detail::wgmma_tf32(acc, us.big, v_small + shift, true);
    detail::wgmma_tf32(acc, us.big, v_big + shift, true);
    detail::commit_wgmma_group();
  }

 private:
  __device__ __forceinline__ static uint64_t descriptor(const unsigned char* part) {
    return detail::wgmma_descriptor(part, kLeadingBytes, kStrideBytes);
  }
};

#endif  // SVDSERVE_HAS_WGMMA

template <uint32_t kChannels>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fused_reconstruct_wgmma_kernel(const ReconstructTask* __restrict__ tasks, uint32_t height,
                                   uint32_t width) {
#if SVDSERVE_HAS_WGMMA
  constexpr uint32_t kPitch = pitch<kChannels>();
  extern __shared__ __align__(128) unsigned char shared[];
  unsigned char* const staging = shared + kStagingOffset;
  const ReconstructTask task = tasks[blockIdx.z];
  const detail::OutputTile<kTile, kThreads, kChannels, kPitch> tile(task, width);
  const uint32_t warpgroup = threadIdx.x / kWarpgroupThreads;
  const uint32_t lane = threadIdx.x % kWarpSize;
  // The accumulator layout (wgmma_tf32), and the US fragment's rows: warp w of the warpgroup
  // holds rows 16w + g and 16w + g + 8 (g = lane / 4), columns 8j + 2t and 8j + 2t + 1
  // (t = lane % 4).
  const uint32_t first_row = warpgroup * kWgmmaRows +
                             threadIdx.x % kWarpgroupThreads / kWarpSize * kRowsPerWarp + lane / 4;
  const uint32_t first_col = 2 * (lane % 4);

  const uint32_t slices = max(1U, (task.rank + kWgmmaDepth - 1) / kWgmmaDepth);
  const uint32_t steps = kChannels * slices;
  const StageOperands operands(shared);
  StepReader reader(task, slices, tile.row0 + first_row, tile.col0, height, width);

  // Set once (the asm reads them); each channel's first wgmma then overwrites them.
  detail::WgmmaAccumulators acc = {};
  // After the channel's last k-step: its accumulators rounded into the staging tile.
  const auto finish_channel = [&](uint32_t channel) {
#pragma unroll
    for (uint32_t half = 0; half < 2; ++half) {
      unsigned char* const stage_row =
          tile.staged(staging, first_row + kFragmentRowGap * half, channel);
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
  // Where the k loop is: the step's slice in its channel, the channel, the step's buffer.
  uint32_t slice = 0;
  uint32_t channel = 0;
  uint32_t stage = 0;
  const auto next_stage = [](uint32_t s) { return s + 1 == kStages ? 0 : s + 1; };
  // One k-step: its wgmmas start on `us` (this step's fragment); once the previous step's
  // wgmmas are done (their slice buffer and US registers free), `held` (step + 1's values) has its
  // V written to the next buffer and its US split into `next_us`; then the fence that hands the
  // slice to the tensor cores, and only after it `held` is reloaded with step + 2. The order
  // matters: on sm_90 the proxy fence compiles to a MEMBAR, which orders the thread's loads in
  // flight too, so loads issued before it are waited for there (measured: 6-12 % faster this
  // way; docs/PERFORMANCE.md, session 7).
  const auto run_step = [&](uint32_t step, StepLoad& held, const UsFragment& us,
                            UsFragment& next_us) {
    operands.multiply(stage, us, slice != 0, acc);
    stage = next_stage(stage);
    if (++slice == slices) {
      detail::wait_wgmma<0>();
      detail::pin_accumulators(acc);
      finish_channel(channel);
      slice = 0;
      ++channel;
    } else {
      detail::wait_wgmma<1>();  // the previous step's wgmmas: their buffer and registers are next
    }
    if (step + 1 < steps) {
      held.store_v(shared + stage * kStageBytes);
      held.split_us(next_us);
      detail::fence_shared_for_wgmma();
      if (step + 2 < steps) reader.read(held);
    }
    __syncthreads();
  };

  StepLoad held;  // the next step's values, loaded a step ahead
  UsFragment even_us;  // the US of the even steps, split
  UsFragment odd_us;
  reader.read(held);
  held.store_v(shared);
  held.split_us(even_us);
  detail::fence_shared_for_wgmma();
  if (steps > 1) reader.read(held);
  __syncthreads();
#pragma unroll 1
  for (uint32_t step = 0; step < steps; step += 2) {
    run_step(step, held, even_us, odd_us);
    if (step + 1 < steps) run_step(step + 1, held, odd_us, even_us);
  }
  // Every group is complete already (the last step waited for all); saying so keeps ptxas from
  // putting a full wait inside the loop, which it cannot prove empty at the loop's exit.
  detail::wait_wgmma<0>();

  tile.copy_out(staging, height, width);
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
                           const ImageShape& shape, StreamView stream) {
  dispatch_channels(shape.channels, [&](auto channels) {
    constexpr uint32_t kChannels = decltype(channels)::value;
    detail::launch_tiles<kTile, kThreads>(fused_reconstruct_wgmma_kernel<kChannels>,
                                          shared_bytes<kChannels>(), tasks_device, count, shape,
                                          stream);
  });
}

}  // namespace svdserve::gpu
