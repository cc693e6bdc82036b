// Session 24 experiment (not part of the build): does the wgmma kernel's MMA loop keep the tensor
// cores busier with m64n256 wgmmas on 128 x 256 pairs than with main's m64n128 on 256 x 128 pairs?
// The same FLOPs a step and consumer in both: 3 products (big x big, big x small, small x big) of
// a k16 step on 128 x 128 outputs, as six m64n128k16 (main: two accumulator sets of 64 rows) or
// three m64n256k16 (one set of 64 rows x 256 columns). No copies, no epilogue: the stages hold
// random FP16 values (exponent 2^-10, random sign and mantissa, different in every stage) and a
// step reads the next stage, as the ring does.
// Patterns (one block per SM unless said):
//   peak128  : 4 warpgroups (two blocks of 2), groups of 4 m64n128k16 on one operand pair
//              (svdserve_reconstruct_bench's floor peak, random operands)
//   pair128  : 2 consumer warpgroups, per step 6 x m64n128k16, commit, wait<1> (main's loop)
//   wide256  : 2 consumer warpgroups, per step 3 x m64n256k16, commit, wait<1>
//   pair128b / wide256b: the same with main's ring handshake: a producer warp arrives on each
//              stage's "full" barrier after the consumers' "empty" arrivals (no copies); a
//              consumer waits "full", issues, and hands the previous step's stage back.
// Build: nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 [-DSTAGES=8] -o wgmma_shapes
//        wgmma_shapes.cu   (call 6 ran both, as wgmma_shapes and wgmma_shapes8)
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e = (call);                                                           \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

#ifndef STAGES
#define STAGES 5
#endif
constexpr uint32_t kStages = STAGES;  // main: 5 with 3 channels (its staging takes the rest)
constexpr uint32_t kStageBytes = 24 * 1024;  // 3 blocks of 8 KiB (big 4 KiB + small 4 KiB)
constexpr uint32_t kBlockBytes = 8 * 1024;
constexpr uint32_t kPartBytes = 4 * 1024;  // 128 rows x 16 FP16 values

__device__ __forceinline__ uint64_t desc(uint32_t smem_address) {
  // No swizzle; leading (k) 128 bytes, stride (8 rows) 256 bytes; addresses >> 4.
  return uint64_t{(smem_address >> 4) & 0x3FFF} | uint64_t{128 >> 4} << 16 |
         uint64_t{256 >> 4} << 32;
}

#define ACC64                                                                               \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
  "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45," \
  "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define OPS64(d)                                                                              \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),          \
      "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
      "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),            \
      "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),            \
      "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),            \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),            \
      "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
      "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),            \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),            \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),            \
      "+f"(d[62]), "+f"(d[63])

__device__ __forceinline__ void mma128(float (&d)[64], uint64_t a, uint64_t b, bool acc = true) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " ACC64 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
      : OPS64(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(acc)));
}

// m64n256: 128 accumulators, as two halves of 64 (columns 0-127 in d0's layout... the register
// list is simply d0 then d1).
__device__ __forceinline__ void mma256(float (&d0)[64], float (&d1)[64], uint64_t a, uint64_t b,
                                       bool acc = true) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,"
      "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,"
      "%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,"
      "%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,"
      "%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,"
      "%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : OPS64(d0), "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]), "+f"(d1[3]), "+f"(d1[4]), "+f"(d1[5]),
        "+f"(d1[6]), "+f"(d1[7]), "+f"(d1[8]), "+f"(d1[9]), "+f"(d1[10]), "+f"(d1[11]),
        "+f"(d1[12]), "+f"(d1[13]), "+f"(d1[14]), "+f"(d1[15]), "+f"(d1[16]), "+f"(d1[17]),
        "+f"(d1[18]), "+f"(d1[19]), "+f"(d1[20]), "+f"(d1[21]), "+f"(d1[22]), "+f"(d1[23]),
        "+f"(d1[24]), "+f"(d1[25]), "+f"(d1[26]), "+f"(d1[27]), "+f"(d1[28]), "+f"(d1[29]),
        "+f"(d1[30]), "+f"(d1[31]), "+f"(d1[32]), "+f"(d1[33]), "+f"(d1[34]), "+f"(d1[35]),
        "+f"(d1[36]), "+f"(d1[37]), "+f"(d1[38]), "+f"(d1[39]), "+f"(d1[40]), "+f"(d1[41]),
        "+f"(d1[42]), "+f"(d1[43]), "+f"(d1[44]), "+f"(d1[45]), "+f"(d1[46]), "+f"(d1[47]),
        "+f"(d1[48]), "+f"(d1[49]), "+f"(d1[50]), "+f"(d1[51]), "+f"(d1[52]), "+f"(d1[53]),
        "+f"(d1[54]), "+f"(d1[55]), "+f"(d1[56]), "+f"(d1[57]), "+f"(d1[58]), "+f"(d1[59]),
        "+f"(d1[60]), "+f"(d1[61]), "+f"(d1[62]), "+f"(d1[63])
      : "l"(a), "l"(b), "r"(static_cast<int>(acc)));
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ void bar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(
                   static_cast<uint32_t>(__cvta_generic_to_shared(bar))),
               "r"(count));
}
__device__ __forceinline__ void bar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared.b64 _, [%0];" ::"r"(
                   static_cast<uint32_t>(__cvta_generic_to_shared(bar)))
               : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(
          static_cast<uint32_t>(__cvta_generic_to_shared(bar))),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ uint32_t random_f16x2(uint32_t i) {
  uint64_t z = (uint64_t{i} + 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (static_cast<uint32_t>(z) & 0x83FF83FFU) | 0x14001400U;
}

enum Pattern : int {
  peak128 = 0,
  pair128 = 1,
  wide256 = 2,
  pair128b = 3,
  wide256b = 4,
  single128 = 5,   // pair128's loop on one consumer warpgroup per SM
  pair128b2 = 6,   // pair128b with every consumer thread arriving on "empty" (count 256)
  pair128e16 = 7,  // pair128b with main's epilogue every 16 steps (k = 256: a channel)
  pair128e4 = 8,   // ... every 4 steps (k = 64)
  half128e16 = 9,  // 64-row tiles: a consumer's 3 wgmmas a step on one set, 16 KiB stages
  half128e4 = 10,  //   [US of both consumers | V], rounding 64 accumulators (call 10)
  pair128e20 = 11,   // pair128e16 with a rounding every 20 steps (call 15)
  pair128e10 = 12,   // ... every 10 steps
  pair128e16i = 13,  // pair128e16 with the stage and parity kept as counters, not step % stages
  pair128e4i = 14,   // ... every 4 steps
};

struct Clock {
  long long cycles[2];
  unsigned long long ns[2];
};

__device__ __forceinline__ void sample(Clock* clock, int at) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  clock->cycles[at] = clock64();
  clock->ns[at] = ns;
}

template <int kPattern>
constexpr bool kHalf = kPattern == half128e16 || kPattern == half128e4;
template <int kPattern>
constexpr uint32_t kPatternStageBytes = kHalf<kPattern> ? 2 * kBlockBytes : kStageBytes;
template <int kPattern>
constexpr uint32_t kSharedBytes =
    kPattern == peak128 ? 2 * kPartBytes : kStages * kPatternStageBytes<kPattern> + 2 * 16384;

__device__ __forceinline__ unsigned char round_byte(float value) {
  float scaled;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(scaled) : "f"(value), "f"(1.0F / 256), "f"(0.5F / 256));
  return static_cast<unsigned char>(min(__float_as_uint(__fadd_rd(scaled, 49152.0F)), 0x47400000U + 255));
}

template <int kPattern>
__global__ void __launch_bounds__(288, kPattern == peak128 ? 2 : 1) shapes_kernel(float* out, uint32_t steps, Clock* clock,
                                                          int lead) {
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ uint64_t full[kStages], empty[kStages];
  constexpr bool kIncremental = kPattern == pair128e16i || kPattern == pair128e4i;
  constexpr bool kHandshake = kPattern == pair128b || kPattern == wide256b ||
                              kPattern == pair128b2 || kPattern == pair128e16 ||
                              kPattern == pair128e4 || kHalf<kPattern> || kPattern >= pair128e20;
  constexpr bool kAllArrive = kPattern == pair128b2;
  // Steps between epilogues (0: none). The epilogue: wait for the wgmmas, then round the 128
  // accumulators into bytes of a staging tile (FFMA.SAT, FADD.RM, IMNMX, STS.U8 each), as main's
  // rounding does; consumer 1 runs 3 steps behind in its channel (main's stagger).
  constexpr uint32_t kEvery =
      (kPattern == pair128e16 || kPattern == half128e16 || kPattern == pair128e16i) ? 16
      : (kPattern == pair128e4 || kPattern == half128e4 || kPattern == pair128e4i)  ? 4
      : kPattern == pair128e20                                                      ? 20
      : kPattern == pair128e10                                                      ? 10
                                                                                    : 0;
  constexpr uint32_t kStageSize = kPatternStageBytes<kPattern>;
  constexpr bool kWide = kPattern == wide256 || kPattern == wide256b;
  const uint32_t words = kSharedBytes<kPattern> / 4;
  for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) {
    reinterpret_cast<uint32_t*>(smem)[i] = random_f16x2(i + blockIdx.x * words);
  }
  if (threadIdx.x == 0) {
    for (uint32_t s = 0; s < kStages; ++s) {
      bar_init(&full[s], 1);
      bar_init(&empty[s], kAllArrive ? 256 : 2);
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  __syncthreads();
  sample(clock, 0);
  const uint32_t warpgroup = threadIdx.x / 128;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if (kPattern == single128 && warpgroup == 1) return;
  if (warpgroup == 2) {  // the producer warp (threads 256-287)
    if (kHandshake && threadIdx.x == 256) {
      uint32_t stage = 0, phase = 0;
      for (uint32_t s = 0; s < steps; ++s) {
        if constexpr (!kIncremental) {
          stage = s % kStages;
          phase = (s / kStages) & 1U;
        }
        bar_wait(&empty[stage], phase ^ 1U);
        bar_arrive(&full[stage]);
        if constexpr (kIncremental) {
          if (++stage == kStages) {
            stage = 0;
            phase ^= 1U;
          }
        }
      }
    }
    return;
  }
  // Not initialised: a channel's first wgmma of each set overwrites (scale-d 0). In this
  // program's first form, zeroing them in a loop made ptxas serialise the wgmmas (C7515); the
  // kernel and tests/bench/wgmma_loop_alone.cu define them once with = {}, which does not.
  float d0[64], d1[64];
  if constexpr (kPattern == peak128) {
    const uint64_t a = desc(base), b = desc(base + kPartBytes);
    for (uint32_t s = 0; s < steps; ++s) {
      fence();
      mma128(d0, a, b, s != 0);
      mma128(d0, a, b);
      mma128(d0, a, b);
      mma128(d0, a, b);
      commit();
      wait<1>();
    }
  } else {
    // A channel is kEvery steps (all of them without an epilogue); a step's stage is handed back
    // once the next step's wgmmas are issued, the channel's last after its drain, as in main.
    const bool elected = kAllArrive || threadIdx.x % 128 == 0;
    uint32_t s = 0;
    // lead < 0: consumer 1's channels end 3 steps off consumer 0's (calls 5-6). lead >= 0 (call
    // 8): as the kernel, consumer 1 starts once consumer 0 has issued `lead` steps (named
    // barrier 1), and both end their channels at the same steps.
    uint32_t length = kEvery == 0 ? steps : (lead < 0 && warpgroup == 1) ? 3 : kEvery;
    if (lead > 0 && warpgroup == 1) asm volatile("bar.sync 1, 256;" ::: "memory");
    bool released = lead <= 0;
    uint32_t next_stage = 0, next_phase = 0, previous_stage = 0;  // kIncremental's counters
    while (s < steps) {
      const uint32_t n = min(length, steps - s);
#pragma unroll 1
      for (uint32_t i = 0; i < n; ++i, ++s) {
        const uint32_t stage = kIncremental ? next_stage : s % kStages;
        const uint32_t phase = kIncremental ? next_phase : (s / kStages) & 1U;
        if constexpr (kIncremental) {
          previous_stage = stage;
          if (++next_stage == kStages) {
            next_stage = 0;
            next_phase ^= 1U;
          }
        }
        if constexpr (kHandshake) bar_wait(&full[stage], phase);
        const uint32_t st = base + stage * kStageSize;
        fence();
        if constexpr (kHalf<kPattern>) {
          // [US (128 rows: consumer c's 64 at 2 KiB c) | V], big then small each.
          const uint32_t a = st + warpgroup * (kPartBytes / 2), v = st + kBlockBytes;
          mma128(d0, desc(a), desc(v), i != 0);
          mma128(d0, desc(a), desc(v + kPartBytes));
          mma128(d0, desc(a + kPartBytes), desc(v));
        } else if constexpr (!kWide) {
          // [upper US | lower US | V], each block big then small; consumer c owns US block c.
          const uint32_t us = st + warpgroup * kBlockBytes, v = st + 2 * kBlockBytes;
          const uint32_t a_top = us, a_bottom = us + kPartBytes / 2;  // rows 64.. (2 KiB on)
          mma128(d0, desc(a_top), desc(v), i != 0);
          mma128(d0, desc(a_top), desc(v + kPartBytes));
          mma128(d0, desc(a_top + kPartBytes), desc(v));
          mma128(d1, desc(a_bottom), desc(v), i != 0);
          mma128(d1, desc(a_bottom), desc(v + kPartBytes));
          mma128(d1, desc(a_bottom + kPartBytes), desc(v));
        } else {
          // [US | V0 big, V1 big | V0 small, V1 small]; consumer c owns US rows 64c..64c+63.
          const uint32_t a_big = st + warpgroup * (kPartBytes / 2);
          const uint32_t a_small = a_big + kPartBytes;
          const uint32_t v_big = st + kBlockBytes, v_small = st + 2 * kBlockBytes;
          mma256(d0, d1, desc(a_big), desc(v_big), i != 0);
          mma256(d0, d1, desc(a_big), desc(v_small));
          mma256(d0, d1, desc(a_small), desc(v_big));
        }
        commit();
        if (!released && warpgroup == 0 && s + 1 == static_cast<uint32_t>(lead)) {
          asm volatile("bar.arrive 1, 256;" ::: "memory");
          released = true;
        }
        if (i != 0) {
          wait<1>();
          const uint32_t before = kIncremental ? (stage == 0 ? kStages - 1 : stage - 1)
                                               : (s - 1) % kStages;
          if (kHandshake && elected) bar_arrive(&empty[before]);
        }
      }
      wait<0>();
      if (kHandshake && elected) {
        bar_arrive(&empty[kIncremental ? previous_stage : (s - 1) % kStages]);
      }
      for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d0[i]), "+f"(d1[i])::"memory");
      if constexpr (kEvery != 0) {
        unsigned char* staging = smem + kStages * kStageSize + warpgroup * 16384;
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          staging[i * 128 + threadIdx.x % 128] = round_byte(d0[i]);
          if constexpr (!kHalf<kPattern>) {
            staging[8192 + i * 128 + threadIdx.x % 128] = round_byte(d1[i]);
          }
        }
      }
      length = kEvery == 0 ? steps : kEvery;
    }
  }
  wait<0>();
  sample(clock, 1);
  float sum = 0;
  for (int i = 0; i < 64; ++i) sum += d0[i];
  if constexpr (kPattern != peak128 && !kHalf<kPattern>) {
    for (int i = 0; i < 64; ++i) sum += d1[i];
  }
  out[blockIdx.x * 256 + threadIdx.x] = sum;
}

template <int kPattern>
void run(const char* name, int sms, uint32_t steps, int lead = -1) {
  const uint32_t blocks = kPattern == peak128 ? 2 * sms : sms;
  const uint32_t consumers = kPattern == single128 ? 1 : 2;
  const size_t smem = kSharedBytes<kPattern>;
  CHECK(cudaFuncSetAttribute(shapes_kernel<kPattern>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem)));
  float* out;
  Clock* clock;
  CHECK(cudaMalloc(&out, blocks * 256 * sizeof(float)));
  CHECK(cudaMalloc(&clock, sizeof(Clock)));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  // FLOPs per consumer warpgroup step: peak128 4 x m64n128k16; the others 3 products of 128 x 128
  // x 16 (= 6 x m64n128k16).
  const double per_step = kPattern == peak128   ? 4.0 * 2 * 64 * 128 * 16
                          : kHalf<kPattern> ? 3.0 * 2 * 64 * 128 * 16
                                            : 3.0 * 2 * 128 * 128 * 16;
  double best = 0, best_ghz = 0;
  for (int r = -1; r < 5; ++r) {
    CHECK(cudaEventRecord(start));
    shapes_kernel<kPattern><<<blocks, 288, smem>>>(out, steps, clock, lead);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    Clock c;
    CHECK(cudaMemcpy(&c, clock, sizeof c, cudaMemcpyDeviceToHost));
    const double tflops = per_step * steps * blocks * consumers / (ms * 1e-3) / 1e12;
    if (r >= 0 && tflops > best) {
      best = tflops;
      best_ghz = double(c.cycles[1] - c.cycles[0]) / double(c.ns[1] - c.ns[0]);
    }
  }
  std::printf("%-11s %8.1f TFLOP/s  SM clock %.3f GHz  (%.0f FLOP/clock/SM)\n", name, best, best_ghz,
              best * 1e12 / (best_ghz * 1e9) / sms);
  CHECK(cudaFree(out));
  CHECK(cudaFree(clock));
}

int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint32_t steps = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (argc > 2 && std::strcmp(argv[2], "x") == 0) {  // call 15: channel lengths, counters
    for (int round = 0; round < 2; ++round) {
      run<pair128e16>("pair128e16", sms, steps, 3);
      run<pair128e20>("pair128e20", sms, steps, 3);
      run<pair128e10>("pair128e10", sms, steps, 3);
      run<pair128e4>("pair128e4", sms, steps, 3);
      run<pair128e16i>("pair128e16i", sms, steps, 3);
      run<pair128e4i>("pair128e4i", sms, steps, 3);
    }
    return 0;
  }
  if (argc > 2) {  // wgmma_shapes STEPS LEAD...: the rounding patterns with the kernel's stagger
    for (int round = 0; round < 2; ++round) {
      for (int i = 2; i < argc; ++i) {
        const int lead = std::atoi(argv[i]);
        if constexpr (kSharedBytes<pair128e16> <= 227 * 1024) {  // 24 KiB stages fit
          std::printf("lead %d: ", lead);
          run<pair128e16>("pair128e16", sms, steps, lead);
          std::printf("lead %d: ", lead);
          run<pair128e4>("pair128e4", sms, steps, lead);
        }
        std::printf("lead %d: ", lead);
        run<half128e16>("half128e16", sms, steps, lead);
        std::printf("lead %d: ", lead);
        run<half128e4>("half128e4", sms, steps, lead);
      }
    }
    return 0;
  }
  for (int round = 0; round < 2; ++round) {
    run<peak128>("peak128", sms, steps);
    run<pair128>("pair128", sms, steps);
    run<wide256>("wide256", sms, steps);
    run<pair128b>("pair128b", sms, steps);
    run<wide256b>("wide256b", sms, steps);
    run<single128>("single128", sms, steps);
    run<pair128b2>("pair128b2", sms, steps);
    run<pair128e16>("pair128e16", sms, steps);
    run<pair128e4>("pair128e4", sms, steps);
  }
  return 0;
}
