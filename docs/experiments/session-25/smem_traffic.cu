// Session 25 experiment (not part of the build): is the wgmma kernel's MMA loop bound by shared
// memory traffic? Per clock, an m64n128k16 FP16 wgmma with both operands in shared memory reads
// 2 KiB of A and 4 KiB of B in 64 cycles: 96 of the SM's 128 bytes a cycle at the tensor peak.
// The kernel adds the operand stream (24 KiB a step written by the copy engine: 32 bytes a cycle
// more), the roundings' byte stores into the staging tiles (a wavefront per warp store) and the
// tile stores' reads. The loop alone (tests/bench/wgmma_loop_alone.cu) has only the roundings and
// loses a near constant ~1,190 cycles a channel (session 24, call 15).
//
// Patterns: the loop alone's schedule (5 stages, counters, consumer 1 three steps behind) on
//   pair : main's 256 x 128 pairs, six m64n128k16 a step and consumer
//   wide : 128 x 256 pairs, three m64n256k16 a step and consumer (the same FLOPs; A 6 KiB and
//          B 24 KiB read a step and consumer, against 12 and 24 for pair)
// with a rounding every E steps (E = 16: a channel at k = 256, 4: at k = 64, 0: none), its stores
//   bytes: one STS.U8 a value (the loop alone's, conflict free)
//   words: four values packed, one STS.32 (a quarter of the wavefronts)
//   none : rounded and folded into a register, not stored
//   drain: no rounding at all (the drain and the restart of the accumulators only)
//   twice: bytes, and each value rounded once more (from value + 1) and folded into a register
//   f2i  : round_to_u8 by the conversion instruction (cvt.rzi.sat.u8.f32 of value + 0.5, as
//          reconstruct_tile_io.cuh's round_to_u8_bits), then STS.U8: 3 instructions, not 4
//   rni  : cvt.rni.sat.u8.f32 of the value (ties to even: not round_to_u8), then STS.U8: 2
// and optionally
//   fill : the producer copies each stage's three 8 KiB blocks from global memory (L2-resident,
//          different for every block and stage) by bulk copies, as the kernel's producer does
//   store: after each rounding the consumer's 16 KiB staging tile is bulk-stored to global, read
//          back before the next rounding (the kernel stores 3 channels at once: the same bytes)
//
// and (call 2) turns: a ring of 4 stages per consumer, each consumer on its own tiles, taking
//   turns on the tensor cores channel by channel (CUTLASS's ping-pong order barrier): one issues
//   a channel's wgmmas while the other drains and rounds its last.
//
// Build (repository root): nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -I. \
//          -o bundle/smem_traffic docs/experiments/session-25/smem_traffic.cu
// Run: smem_traffic [STEPS] (two rounds of every pattern; prints FLOP/clock/SM and % of 4096,
//      the m64n128k16 peak per clock and SM).
#define main session24_main  // reuse session 24's stand-alone helpers, not its program
#include "docs/experiments/session-24/wgmma_shapes.cu"
#undef main

#include "kernels/gpu/bulk_load.cuh"
#include "kernels/gpu/named_barrier.cuh"
#include "kernels/gpu/ring_position.cuh"

namespace g = svdserve::gpu::detail;

enum Store : int { bytes = 0, words = 1, none = 2, drain = 3, twice = 4, f2i = 5, rni = 6 };
constexpr uint32_t kStaging = 16384;  // a consumer's 128 x 128 bytes
constexpr uint32_t kTrafficShared = kStages * kStageBytes + 2 * kStaging;

template <bool kWide, uint32_t kEvery, int kStore, bool kFill, bool kTileStore>
__global__ void __launch_bounds__(288, 1)
    traffic_kernel(float* out, uint32_t steps, Clock* clock, const unsigned char* source,
                   unsigned char* sink) {
#if SVDSERVE_HAS_BULK_STORE  // the device pass for sm_90a
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ uint64_t full[kStages], empty[kStages];
  if constexpr (!kFill) {
    const uint32_t words_all = kStages * kStageBytes / 4;
    for (uint32_t i = threadIdx.x; i < words_all; i += blockDim.x) {
      reinterpret_cast<uint32_t*>(smem)[i] = random_f16x2(i + blockIdx.x * words_all);
    }
  }
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < kStages; ++s) {
      g::init_barrier(&full[s], 1);
      g::init_barrier(&empty[s], 2);
    }
    g::fence_barrier_init();
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  sample(clock, 0);
  const uint32_t warpgroup = threadIdx.x / 128;
  const uint32_t thread = threadIdx.x % 128;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if (warpgroup == 2) {  // the producer
    if (threadIdx.x == 256) {
      g::RingPosition<kStages> position;
      for (uint32_t s = 0; s < steps; ++s, position.advance()) {
        g::wait_barrier(&empty[position.stage], position.parity ^ 1U);
        if constexpr (kFill) {
          g::arrive_expecting(&full[position.stage], kStageBytes);
          const unsigned char* from =
              source + (std::size_t{blockIdx.x} * kStages + position.stage) * kStageBytes;
          unsigned char* to = smem + position.stage * kStageBytes;
          for (uint32_t b = 0; b < 3; ++b) {
            g::bulk_load(to + b * kBlockBytes, from + b * kBlockBytes, kBlockBytes,
                         &full[position.stage]);
          }
        } else {
          g::arrive(&full[position.stage]);
        }
      }
    }
    return;
  }
  unsigned char* const staging = smem + kStages * kStageBytes + warpgroup * kStaging;
  float d0[64] = {}, d1[64] = {};
  uint32_t folded = 0;
  if (warpgroup == 1) g::sync_named_barrier<256>(1);
  bool released = warpgroup == 1;
  bool staging_read = false;
  g::RingPosition<kStages> position;
  uint32_t previous_stage = 0;
  uint32_t s = 0;
  while (s < steps) {
    const uint32_t n = kEvery == 0 ? steps : min(kEvery, steps - s);
#pragma unroll 1
    for (uint32_t i = 0; i < n; ++i, ++s, position.advance()) {
      const uint32_t stage = position.stage;
      g::wait_barrier(&full[stage], position.parity);
      const uint32_t st = base + stage * kStageBytes;
      fence();
      if constexpr (!kWide) {
        const uint32_t us = st + warpgroup * kBlockBytes, v = st + 2 * kBlockBytes;
        const uint32_t a_top = us, a_bottom = us + kPartBytes / 2;
        mma128(d0, desc(a_top + kPartBytes), desc(v), i != 0);
        mma128(d0, desc(a_top), desc(v + kPartBytes));
        mma128(d0, desc(a_top), desc(v));
        mma128(d1, desc(a_bottom + kPartBytes), desc(v), i != 0);
        mma128(d1, desc(a_bottom), desc(v + kPartBytes));
        mma128(d1, desc(a_bottom), desc(v));
      } else {
        const uint32_t a_big = st + warpgroup * (kPartBytes / 2);
        const uint32_t a_small = a_big + kPartBytes;
        const uint32_t v_big = st + kBlockBytes, v_small = st + 2 * kBlockBytes;
        mma256(d0, d1, desc(a_small), desc(v_big), i != 0);
        mma256(d0, d1, desc(a_big), desc(v_small));
        mma256(d0, d1, desc(a_big), desc(v_big));
      }
      commit();
      if (!released && s + 1 == 3) {
        g::arrive_named_barrier<256>(1);
        released = true;
      }
      if (i != 0) {
        wait<1>();
        if (thread == 0) g::arrive(&empty[previous_stage]);
      }
      previous_stage = stage;
    }
    wait<0>();
    if (thread == 0) g::arrive(&empty[previous_stage]);
    if constexpr (kEvery != 0 && kStore != drain) {
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d0[i]), "+f"(d1[i])::"memory");
      if constexpr (kTileStore) {
        if (staging_read) {  // the previous tile store has read the staging
          if (thread == 0) g::wait_bulk_reads();
          g::sync_named_barrier<128>(2 + warpgroup);
        }
      }
      if constexpr (kStore == bytes || kStore == twice) {
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          staging[i * 128 + thread] = round_byte(d0[i]);
          staging[8192 + i * 128 + thread] = round_byte(d1[i]);
          if constexpr (kStore == twice) {
            folded += round_byte(d0[i] + 1.0F) + round_byte(d1[i] + 1.0F);
          }
        }
      } else if constexpr (kStore == words) {
        uint32_t* const staging32 = reinterpret_cast<uint32_t*>(staging);
#pragma unroll
        for (int i = 0; i < 64; i += 4) {
          staging32[i / 4 * 128 + thread] =
              uint32_t{round_byte(d0[i])} | uint32_t{round_byte(d0[i + 1])} << 8 |
              uint32_t{round_byte(d0[i + 2])} << 16 | uint32_t{round_byte(d0[i + 3])} << 24;
          staging32[2048 + i / 4 * 128 + thread] =
              uint32_t{round_byte(d1[i])} | uint32_t{round_byte(d1[i + 1])} << 8 |
              uint32_t{round_byte(d1[i + 2])} << 16 | uint32_t{round_byte(d1[i + 3])} << 24;
        }
      } else if constexpr (kStore == f2i || kStore == rni) {
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          uint32_t b0, b1;
          if constexpr (kStore == f2i) {
            asm("cvt.rzi.sat.u8.f32 %0, %1;" : "=r"(b0) : "f"(d0[i] + 0.5F));
            asm("cvt.rzi.sat.u8.f32 %0, %1;" : "=r"(b1) : "f"(d1[i] + 0.5F));
          } else {
            asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(b0) : "f"(d0[i]));
            asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(b1) : "f"(d1[i]));
          }
          staging[i * 128 + thread] = static_cast<unsigned char>(b0);
          staging[8192 + i * 128 + thread] = static_cast<unsigned char>(b1);
        }
      } else if constexpr (kStore == none) {
#pragma unroll
        for (int i = 0; i < 64; ++i) folded += round_byte(d0[i]) + round_byte(d1[i]);
      }
      if constexpr (kTileStore) {
        g::fence_shared_for_bulk_copy();
        g::sync_named_barrier<128>(2 + warpgroup);
        if (thread == 0) {
          g::bulk_store(sink + (std::size_t{blockIdx.x} * 2 + warpgroup) * kStaging, staging,
                        kStaging);
          g::commit_bulk_group();
        }
        staging_read = true;
      }
    }
  }
  if (!released) g::arrive_named_barrier<256>(1);
  if (kTileStore && thread == 0) g::wait_bulk_reads();
  sample(clock, 1);
  float sum = static_cast<float>(folded);
  for (int i = 0; i < 64; ++i) sum += d0[i] + d1[i];
  out[blockIdx.x * 256 + threadIdx.x] = sum;
#endif
}

__global__ void fill_random(uint32_t* words, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    words[i] = random_f16x2(static_cast<uint32_t>(i));
  }
}

template <bool kWide, uint32_t kEvery, int kStore, bool kFill, bool kTileStore>
void traffic(int sms, uint32_t steps, const unsigned char* source, unsigned char* sink) {
  auto kernel = traffic_kernel<kWide, kEvery, kStore, kFill, kTileStore>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kTrafficShared)));
  float* out;
  Clock* clock;
  CHECK(cudaMalloc(&out, sms * 256 * sizeof(float)));
  CHECK(cudaMalloc(&clock, sizeof(Clock)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const double per_step = 3.0 * 2 * 128 * 128 * 16;  // a consumer's three products a step
  double best = 0, best_ghz = 0;
  for (int r = -1; r < 5; ++r) {
    CHECK(cudaEventRecord(start));
    kernel<<<sms, 288, kTrafficShared>>>(out, steps, clock, source, sink);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    Clock c;
    CHECK(cudaMemcpy(&c, clock, sizeof c, cudaMemcpyDeviceToHost));
    const double tflops = per_step * steps * sms * 2 / (ms * 1e-3) / 1e12;
    if (r >= 0 && tflops > best) {
      best = tflops;
      best_ghz = double(c.cycles[1] - c.cycles[0]) / double(c.ns[1] - c.ns[0]);
    }
  }
  const double per_clock = best * 1e12 / (best_ghz * 1e9) / sms;
  const char* store_name[] = {"bytes", "words", "none", "drain", "twice", "f2i", "rni"};
  std::printf("%-4s E=%-2u %-5s %-4s %-5s %7.1f TFLOP/s  SM %.3f GHz  %5.0f FLOP/clk/SM  %5.1f %%\n",
              kWide ? "wide" : "pair", kEvery, kEvery == 0 ? "-" : store_name[kStore],
              kFill ? "fill" : "-", kTileStore ? "store" : "-", best, best_ghz, per_clock,
              100.0 * per_clock / 4096);
  CHECK(cudaFree(out));
  CHECK(cudaFree(clock));
}

// Turns (call 2): consumer c owns ring c (kTurnStages stages of the pair's 24 KiB layout, of
// which it reads US block c and V), served by producer lane c; a channel's wgmmas are issued only
// in the consumer's turn, which it passes on once they are issued (named barriers 4 + c).
constexpr uint32_t kTurnStages = 4;
constexpr uint32_t kTurnShared = 2 * kTurnStages * kStageBytes + 2 * kStaging;

template <uint32_t kEvery>
__global__ void __launch_bounds__(288, 1)
    turns_kernel(float* out, uint32_t steps, Clock* clock) {
#if SVDSERVE_HAS_BULK_STORE
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ uint64_t full[2][kTurnStages], empty[2][kTurnStages];
  const uint32_t words_all = 2 * kTurnStages * kStageBytes / 4;
  for (uint32_t i = threadIdx.x; i < words_all; i += blockDim.x) {
    reinterpret_cast<uint32_t*>(smem)[i] = random_f16x2(i + blockIdx.x * words_all);
  }
  if (threadIdx.x == 0) {
    for (uint32_t r = 0; r < 2; ++r) {
      for (uint32_t s = 0; s < kTurnStages; ++s) {
        g::init_barrier(&full[r][s], 1);
        g::init_barrier(&empty[r][s], 1);
      }
    }
    g::fence_barrier_init();
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  sample(clock, 0);
  const uint32_t warpgroup = threadIdx.x / 128;
  const uint32_t thread = threadIdx.x % 128;
  if (warpgroup == 2) {
    const uint32_t ring = threadIdx.x - 256;
    if (ring < 2) {
      g::RingPosition<kTurnStages> position;
      for (uint32_t s = 0; s < steps; ++s, position.advance()) {
        g::wait_barrier(&empty[ring][position.stage], position.parity ^ 1U);
        g::arrive(&full[ring][position.stage]);
      }
    }
    return;
  }
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem)) +
                        warpgroup * kTurnStages * kStageBytes;
  unsigned char* const staging = smem + 2 * kTurnStages * kStageBytes + warpgroup * kStaging;
  float d0[64] = {}, d1[64] = {};
  g::RingPosition<kTurnStages> position;
  uint32_t previous_stage = 0;
  uint32_t s = 0;
  bool first = true;
  while (s < steps) {
    const uint32_t n = min(kEvery, steps - s);
    if (!(first && warpgroup == 0)) g::sync_named_barrier<256>(4 + warpgroup);  // my turn
    first = false;
#pragma unroll 1
    for (uint32_t i = 0; i < n; ++i, ++s, position.advance()) {
      const uint32_t stage = position.stage;
      g::wait_barrier(&full[warpgroup][stage], position.parity);
      const uint32_t st = base + stage * kStageBytes;
      fence();
      const uint32_t us = st + warpgroup * kBlockBytes, v = st + 2 * kBlockBytes;
      const uint32_t a_top = us, a_bottom = us + kPartBytes / 2;
      mma128(d0, desc(a_top + kPartBytes), desc(v), i != 0);
      mma128(d0, desc(a_top), desc(v + kPartBytes));
      mma128(d0, desc(a_top), desc(v));
      mma128(d1, desc(a_bottom + kPartBytes), desc(v), i != 0);
      mma128(d1, desc(a_bottom), desc(v + kPartBytes));
      mma128(d1, desc(a_bottom), desc(v));
      commit();
      if (i != 0) {
        wait<1>();
        if (thread == 0) g::arrive(&empty[warpgroup][previous_stage]);
      }
      previous_stage = stage;
    }
    // The other's turn, unless this was consumer 1's last channel (nobody would take it).
    if (warpgroup == 0 || s < steps) g::arrive_named_barrier<256>(4 + (1 - warpgroup));
    wait<0>();
    if (thread == 0) g::arrive(&empty[warpgroup][previous_stage]);
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d0[i]), "+f"(d1[i])::"memory");
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      staging[i * 128 + thread] = round_byte(d0[i]);
      staging[8192 + i * 128 + thread] = round_byte(d1[i]);
    }
  }
  sample(clock, 1);
  float sum = 0;
  for (int i = 0; i < 64; ++i) sum += d0[i] + d1[i];
  out[blockIdx.x * 256 + threadIdx.x] = sum;
#endif
}

template <uint32_t kEvery>
void turns(int sms, uint32_t steps) {
  CHECK(cudaFuncSetAttribute(turns_kernel<kEvery>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kTurnShared)));
  float* out;
  Clock* clock;
  CHECK(cudaMalloc(&out, sms * 256 * sizeof(float)));
  CHECK(cudaMalloc(&clock, sizeof(Clock)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const double per_step = 3.0 * 2 * 128 * 128 * 16;
  double best = 0, best_ghz = 0;
  for (int r = -1; r < 5; ++r) {
    CHECK(cudaEventRecord(start));
    turns_kernel<kEvery><<<sms, 288, kTurnShared>>>(out, steps, clock);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    Clock c;
    CHECK(cudaMemcpy(&c, clock, sizeof c, cudaMemcpyDeviceToHost));
    const double tflops = per_step * steps * sms * 2 / (ms * 1e-3) / 1e12;
    if (r >= 0 && tflops > best) {
      best = tflops;
      best_ghz = double(c.cycles[1] - c.cycles[0]) / double(c.ns[1] - c.ns[0]);
    }
  }
  const double per_clock = best * 1e12 / (best_ghz * 1e9) / sms;
  std::printf("turn E=%-2u bytes -    -     %7.1f TFLOP/s  SM %.3f GHz  %5.0f FLOP/clk/SM  %5.1f %%\n",
              kEvery, best, best_ghz, per_clock, 100.0 * per_clock / 4096);
  CHECK(cudaFree(out));
  CHECK(cudaFree(clock));
}

template <uint32_t kEvery>
void channel_patterns(int sms, uint32_t steps, const unsigned char* source, unsigned char* sink) {
  traffic<false, kEvery, bytes, false, false>(sms, steps, source, sink);  // the loop alone
  traffic<false, kEvery, none, false, false>(sms, steps, source, sink);
  traffic<false, kEvery, words, false, false>(sms, steps, source, sink);
  traffic<false, kEvery, bytes, true, false>(sms, steps, source, sink);
  traffic<false, kEvery, bytes, true, true>(sms, steps, source, sink);   // ~ the kernel
  traffic<false, kEvery, none, true, false>(sms, steps, source, sink);
  traffic<false, kEvery, words, true, true>(sms, steps, source, sink);
  traffic<true, kEvery, bytes, false, false>(sms, steps, source, sink);
  traffic<true, kEvery, bytes, true, true>(sms, steps, source, sink);
  traffic<true, kEvery, words, true, true>(sms, steps, source, sink);
}

int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint32_t steps = argc > 1 ? std::atoi(argv[1]) : 20000;
  const std::size_t source_bytes = static_cast<std::size_t>(sms) * kStages * kStageBytes;
  unsigned char* source;
  unsigned char* sink;
  CHECK(cudaMalloc(&source, source_bytes));
  CHECK(cudaMalloc(&sink, static_cast<std::size_t>(sms) * 2 * kStaging));
  fill_random<<<264, 256>>>(reinterpret_cast<uint32_t*>(source), source_bytes / 4);
  CHECK(cudaDeviceSynchronize());
  if (argc > 2 && std::strcmp(argv[2], "round") == 0) {  // call 3: the rounding's instructions
    for (int round = 0; round < 2; ++round) {
      std::printf("== round %d\n", round);
      traffic<false, 16, bytes, false, false>(sms, steps, source, sink);
      traffic<false, 16, f2i, false, false>(sms, steps, source, sink);
      traffic<false, 16, rni, false, false>(sms, steps, source, sink);
      traffic<false, 16, f2i, true, true>(sms, steps, source, sink);
      traffic<false, 4, bytes, false, false>(sms, steps, source, sink);
      traffic<false, 4, f2i, false, false>(sms, steps, source, sink);
      traffic<false, 4, rni, false, false>(sms, steps, source, sink);
      traffic<false, 4, f2i, true, true>(sms, steps, source, sink);
    }
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "one") == 0) {  // call 3, under ncu: the loop alone
    traffic<false, 16, bytes, false, false>(sms, steps, source, sink);
    traffic<false, 4, bytes, false, false>(sms, steps, source, sink);
    return 0;
  }
  if (argc > 2 && std::strcmp(argv[2], "turns") == 0) {  // call 2
    for (int round = 0; round < 2; ++round) {
      std::printf("== round %d\n", round);
      for (auto run_e : {16, 4}) {
        if (run_e == 16) {
          traffic<false, 16, bytes, false, false>(sms, steps, source, sink);
          traffic<false, 16, drain, false, false>(sms, steps, source, sink);
          traffic<false, 16, twice, false, false>(sms, steps, source, sink);
          turns<16>(sms, steps);
        } else {
          traffic<false, 4, bytes, false, false>(sms, steps, source, sink);
          traffic<false, 4, drain, false, false>(sms, steps, source, sink);
          traffic<false, 4, twice, false, false>(sms, steps, source, sink);
          turns<4>(sms, steps);
          turns<2>(sms, steps);
          turns<1>(sms, steps);
        }
      }
    }
    return 0;
  }
  for (int round = 0; round < 2; ++round) {
    std::printf("== round %d\n", round);
    traffic<false, 0, bytes, false, false>(sms, steps, source, sink);
    traffic<false, 0, bytes, true, false>(sms, steps, source, sink);
    traffic<true, 0, bytes, false, false>(sms, steps, source, sink);
    traffic<true, 0, bytes, true, false>(sms, steps, source, sink);
    channel_patterns<16>(sms, steps, source, sink);
    channel_patterns<4>(sms, steps, source, sink);
  }
  return 0;
}
