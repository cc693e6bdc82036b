#pragma once
// Device helpers shared by the fused reconstruction kernels (this folder's .cu files): reading
// factor columns four floats at a time, and copying a staged tile of interleaved pixels out to
// the HWC output with 16-byte stores.
//
// The staging contract: each tile row r is laid out in shared memory exactly like its output row
// segment (interleaved channels), starting at r * pitch + (global address of the segment mod 16).
// Staging and output are then congruent mod 16, so the copy-out stores 16 bytes (uint4, STG.128)
// wherever an aligned 16 bytes lies inside the segment, and narrower stores only at its two ends.
// That holds for any width, channel count and output address.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace svdserve::gpu::detail {

inline constexpr uint32_t kVectorFloats = 4;  // float4 loads of the factors
inline constexpr uint32_t kStoreBytes = 16;   // uint4 stores of the output

// Staging row pitch: one tile row of interleaved pixels plus room for the 0..15 byte shift.
template <typename Pixel, uint32_t kChannels, uint32_t kTileCols>
constexpr uint32_t staging_pitch() {
  return kTileCols * kChannels * sizeof(Pixel) + kStoreBytes;
}

__device__ __forceinline__ uint32_t misalignment(std::uintptr_t address) {
  return static_cast<uint32_t>(address % kStoreBytes);
}

__device__ __forceinline__ bool vector_aligned(const float* column0, uint32_t leading) {
  return misalignment(reinterpret_cast<std::uintptr_t>(column0)) == 0 &&
         leading % kVectorFloats == 0;
}

// Elements first..first+3 of factor column k (leading dimension `leading`), zero past the image
// edge (`limit`) and for k >= rank, which keeps reads inside the factors.
__device__ __forceinline__ float4 load_four(const float* __restrict__ factor, uint32_t leading,
                                            uint32_t k, uint32_t rank, uint32_t first,
                                            uint32_t limit, bool aligned) {
  float4 four = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
  if (k >= rank) return four;
  const float* column = factor + std::size_t{k} * leading;
  if (aligned && first + 3 < limit) return __ldg(reinterpret_cast<const float4*>(column + first));
  if (first < limit) four.x = __ldg(column + first);
  if (first + 1 < limit) four.y = __ldg(column + first + 1);
  if (first + 2 < limit) four.z = __ldg(column + first + 2);
  if (first + 3 < limit) four.w = __ldg(column + first + 3);
  return four;
}

// round_to_u8 (pixel_rounding.hpp) in two instructions, bit for bit: FADD then one
// cvt.rzi.sat.u8.f32 (truncate, saturate to 0..255, NaN -> 0). Clamping after the + 0.5 gives the
// same byte: inside (0, 255) the sum is the same float; at or above 255 both give 255; at or below
// 0 the sum is <= 0.5 and truncates (or saturates) to 0. The plain form costs two FMNMX more per
// value, which at small ranks is a large share of the kernel's issue slots.
// svdserve_reconstruct_bench checks this against round_to_u8 for all 2^32 floats.
// Returns the byte in the low 8 bits (upper bits zero), ready for __byte_perm packing.
__device__ __forceinline__ uint32_t round_to_u8_bits(float value) {
  uint32_t byte;
  asm("cvt.rzi.sat.u8.f32 %0, %1;" : "=r"(byte) : "f"(value + 0.5F));
  return byte;
}

// round_to_u8 again, bit for bit, without a conversion instruction: F2I runs at a quarter of the
// FMA rate, which at k = 1 alone takes ~80 % of the time the memory floor allows. Here:
//  - s = sat(fma(v, 2^-8, 2^-9)) = sat(RN(v + 0.5) / 256): the scaling by 2^-8 is exact, .sat
//    clamps to [0, 1] and maps NaN to 0;
//  - adding 1.5 * 2^15 rounding down (its ulp is 2^-8) leaves floor(256 s), 0..256, in the low
//    mantissa bits;
//  - the integer min caps 256 (v + 0.5 >= 256) at 255.
// Three full- or half-rate instructions. The byte is in the low 8 bits but the upper bits are
// not zero: pack it with PRMT. svdserve_reconstruct_bench checks it on all 2^32 floats.
__device__ __forceinline__ uint32_t round_to_u8_packable(float value) {
  constexpr float kScale = 1.0F / 256;
  constexpr float kHalfScaled = 0.5F / 256;
  constexpr float kMagic = 49152.0F;           // 1.5 * 2^15
  constexpr uint32_t kMagicBits = 0x47400000;  // its bits; the low 9 are zero
  float scaled;
  asm("fma.rn.sat.f32 %0, %1, %2, %3;" : "=f"(scaled) : "f"(value), "f"(kScale), "f"(kHalfScaled));
  return min(__float_as_uint(__fadd_rd(scaled, kMagic)), kMagicBits + 255);
}

// Output stores go through __stwb (st.global.wb, the default caching): task.out is loaded from
// memory, so without it the compiler cannot prove the address global and emits generic stores.

// The ends of a row segment, narrower than 16 bytes: 4-byte words for f32 (its output is
// float-aligned, so both ends are word-aligned), single bytes for u8.
template <typename Pixel>
__device__ __forceinline__ void copy_narrow(unsigned char* out, const unsigned char* stage,
                                            uint32_t first, uint32_t last) {
  constexpr uint32_t kStep = sizeof(Pixel);
  using Word = std::conditional_t<sizeof(Pixel) == 4, uint32_t, uint8_t>;
  for (uint32_t b = first; b < last; b += kStep) {
    __stwb(reinterpret_cast<Word*>(out + b), *reinterpret_cast<const Word*>(stage + b));
  }
}

// Copies the staged tile (tile_rows x tile_cols pixels) to tile_out, by kThreads threads of
// which this is `thread`. Work item = one aligned 16-byte chunk of one row segment; consecutive
// threads take consecutive chunks, so a warp writes contiguous memory. The caller synchronises
// before (staging complete).
template <typename Pixel, uint32_t kChannels, uint32_t kPitch, uint32_t kThreads>
__device__ __forceinline__ void copy_out_tile(const unsigned char* staging,
                                              unsigned char* tile_out, std::size_t row_bytes,
                                              uint32_t tile_rows, uint32_t tile_cols,
                                              uint32_t thread) {
  constexpr uint32_t kPixelBytes = kChannels * sizeof(Pixel);
  const uint32_t segment_bytes = tile_cols * kPixelBytes;
  const uint32_t chunks_per_row = (segment_bytes + 2 * kStoreBytes - 2) / kStoreBytes;
  const uint32_t chunks = tile_rows * chunks_per_row;
  for (uint32_t item = thread; item < chunks; item += kThreads) {
    const uint32_t row = item / chunks_per_row;
    const uint32_t chunk = item - row * chunks_per_row;
    unsigned char* const row_out = tile_out + row * row_bytes;
    const uint32_t shift = misalignment(reinterpret_cast<std::uintptr_t>(row_out));
    const unsigned char* const row_stage = staging + row * kPitch + shift;
    // Segment bytes [begin, begin + 16) form one aligned 16 bytes of the output.
    const int begin = static_cast<int>(chunk * kStoreBytes) - static_cast<int>(shift);
    const int end = begin + static_cast<int>(kStoreBytes);
    const int first = max(begin, 0);
    const int last = min(end, static_cast<int>(segment_bytes));
    if (first >= last) continue;
    if (first == begin && last == end) {
      __stwb(reinterpret_cast<uint4*>(row_out + begin),
             *reinterpret_cast<const uint4*>(row_stage + begin));
    } else {
      copy_narrow<Pixel>(row_out, row_stage, static_cast<uint32_t>(first),
                         static_cast<uint32_t>(last));
    }
  }
}

}  // namespace svdserve::gpu::detail
