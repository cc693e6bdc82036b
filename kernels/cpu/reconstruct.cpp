#include "kernels/cpu/reconstruct.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/vector_rounding.hpp"

namespace svdserve {
namespace {

// One tile: rows x columns of every channel, summed by a small sgemm per channel into L1/L2
// scratch, then rounded and interleaved from there into the output.
// 1024^2 RGB k=32 u8, one core (AVX-512, fastest call, images/s): 8x512 350, 16x256 230-350,
// 32x256 240-360; an own register-blocked AVX-512 kernel (4 rows x 64 columns, Vt packed) 290-320.
constexpr uint32_t kTileRows = 8;
constexpr uint32_t kTileColumns = 512;

struct BandJob {
  const CpuFactors& factors;
  uint32_t rank;
  std::byte* band_output;  // the band's first output byte
  RowBand band;
  ReconstructWorkspace& workspace;
};

// The channel-major tile of sums: channel c, row r starts at c * kChannelStride + r * kTileColumns.
constexpr std::size_t kChannelStride = std::size_t{kTileRows} * kTileColumns;

// Rows [row, row + rows) x columns [column, column + columns) of every channel into the tile.
void multiply_tile(const BandJob& job, uint32_t row, uint32_t rows, uint32_t column,
                   uint32_t columns) {
  const ImageShape& shape = job.factors.shape();
  for (uint32_t channel = 0; channel < shape.channels; ++channel) {
    const float* scaled_u = job.workspace.scaled_u.data() +
                            (std::size_t{channel} * job.band.row_count + row) * job.rank;
    // Vt_k is the first k rows of Vt, so it is read in place with leading dimension width.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(columns), static_cast<int>(job.rank), 1.0F, scaled_u,
                static_cast<int>(job.rank), job.factors.channel(channel).vt.data() + column,
                static_cast<int>(shape.width), 0.0F,
                job.workspace.tile.data() + channel * kChannelStride,
                static_cast<int>(kTileColumns));
  }
}

// Rounds the tile and interleaves it into HWC u8: the rounding works on whole vectors whatever
// the channel count, the interleave moves bytes (a constant Channels lets the compiler shuffle
// them in vectors; 0 means known only at run time).
template <unsigned VectorBytes, unsigned Channels>
[[gnu::always_inline]] inline void write_u8_tile(const BandJob& job, uint32_t rows,
                                                 uint32_t columns, std::byte* out) {
  const uint32_t channels = Channels != 0 ? Channels : job.factors.shape().channels;
  const std::size_t row_values = std::size_t{job.factors.shape().width} * channels;
  uint8_t* __restrict rounded = job.workspace.rounded_tile.data();
  cpu_vector::round_to_u8<VectorBytes>(job.workspace.tile.data(), channels * kChannelStride,
                                       rounded);
  for (uint32_t row = 0; row < rows; ++row) {
    auto* __restrict out_row = reinterpret_cast<uint8_t*>(out) + row * row_values;
    const uint8_t* __restrict rounded_row = rounded + std::size_t{row} * kTileColumns;
    for (uint32_t column = 0; column < columns; ++column) {
      for (uint32_t channel = 0; channel < channels; ++channel) {
        out_row[column * channels + channel] = rounded_row[channel * kChannelStride + column];
      }
    }
  }
}

template <unsigned Channels>
[[gnu::always_inline]] inline void write_f32_tile(const BandJob& job, uint32_t rows,
                                                  uint32_t columns, std::byte* out) {
  const uint32_t channels = Channels != 0 ? Channels : job.factors.shape().channels;
  const std::size_t row_bytes = std::size_t{job.factors.shape().width} * channels * sizeof(float);
  const float* __restrict tile = job.workspace.tile.data();
  for (uint32_t row = 0; row < rows; ++row) {
    std::byte* __restrict out_row = out + row * row_bytes;
    const float* __restrict tile_row = tile + std::size_t{row} * kTileColumns;
    for (uint32_t column = 0; column < columns; ++column) {
      for (uint32_t channel = 0; channel < channels; ++channel) {
        // The output buffer promises no float alignment; memcpy compiles to a plain store.
        std::memcpy(out_row + (column * channels + channel) * sizeof(float),
                    &tile_row[channel * kChannelStride + column], sizeof(float));
      }
    }
  }
}

// Column tiles outside, row groups inside: a tile's columns of Vt_k stay in cache for the band.
template <unsigned VectorBytes, unsigned Channels>
[[gnu::always_inline]] inline void fused_band(const BandJob& job, OutputPixels pixels) {
  const ImageShape& shape = job.factors.shape();
  const std::size_t value_bytes = bytes_per_value(pixels);
  const std::size_t row_bytes = std::size_t{shape.width} * shape.channels * value_bytes;
  for (uint32_t column = 0; column < shape.width; column += kTileColumns) {
    const uint32_t columns = std::min(kTileColumns, shape.width - column);
    for (uint32_t row = 0; row < job.band.row_count; row += kTileRows) {
      const uint32_t rows = std::min(kTileRows, job.band.row_count - row);
      multiply_tile(job, row, rows, column, columns);
      std::byte* out = job.band_output + row * row_bytes + column * shape.channels * value_bytes;
      if (pixels == OutputPixels::u8) {
        write_u8_tile<VectorBytes, Channels>(job, rows, columns, out);
      } else {
        write_f32_tile<Channels>(job, rows, columns, out);
      }
    }
  }
}

// Grey, BGR and BGRA get an interleave the compiler specialises; others a run-time loop.
template <unsigned VectorBytes>
[[gnu::always_inline]] inline void run_band(const BandJob& job, OutputPixels pixels) {
  switch (job.factors.shape().channels) {
    case 1: return fused_band<VectorBytes, 1>(job, pixels);
    case 3: return fused_band<VectorBytes, 3>(job, pixels);
    case 4: return fused_band<VectorBytes, 4>(job, pixels);
    default: return fused_band<VectorBytes, 0>(job, pixels);
  }
}

using BandFunction = void (*)(const BandJob&, OutputPixels);

void band_sse2(const BandJob& job, OutputPixels pixels) { run_band<16>(job, pixels); }

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void band_avx2(const BandJob& job, OutputPixels pixels) {
  run_band<32>(job, pixels);
}
[[gnu::target("avx2,fma,avx512f,avx512bw,avx512dq,avx512vl")]] void band_avx512(const BandJob& job, OutputPixels pixels) {
  run_band<64>(job, pixels);
}
#endif

struct InstructionSet {
  BandFunction band;
  const char* name;
};

// Chosen once per process from what this CPU supports.
[[nodiscard]] InstructionSet detect_instruction_set() noexcept {
#if defined(__x86_64__)
  const CpuFeatures cpu = host_cpu_features();
  if (cpu.avx512) return {band_avx512, "avx512"};
  if (cpu.avx2_fma) return {band_avx2, "avx2"};
#endif
  return {band_sse2, "sse2"};
}

[[nodiscard]] const InstructionSet& instruction_set() noexcept {
  static const InstructionSet detected = detect_instruction_set();
  return detected;
}

}  // namespace

void reconstruct_band(const CpuFactors& factors, uint32_t rank, OutputPixels pixels,
                      std::span<std::byte> output, RowBand band, ReconstructWorkspace& workspace) {
  const ImageShape& shape = factors.shape();
  const std::size_t rank_kept = factors.rank_kept();
  // Fold S into a compact copy of the band's U_k: an h x k scaling instead of an h x w one.
  workspace.scaled_u.resize(std::size_t{shape.channels} * band.row_count * rank);
  for (uint32_t channel = 0; channel < shape.channels; ++channel) {
    const float* u = factors.channel(channel).u.data();
    const std::span<const float> singular_values = factors.singular_values(channel);
    float* scaled = workspace.scaled_u.data() + std::size_t{channel} * band.row_count * rank;
    for (std::size_t row = 0; row < band.row_count; ++row) {
      const float* u_row = u + (band.first_row + row) * rank_kept;
      for (std::size_t i = 0; i < rank; ++i) scaled[row * rank + i] = u_row[i] * singular_values[i];
    }
  }
  workspace.tile.resize(shape.channels * kChannelStride);
  workspace.rounded_tile.resize(shape.channels * kChannelStride);

  const std::size_t first_value = std::size_t{band.first_row} * shape.width * shape.channels;
  const BandJob job{factors, rank, output.data() + first_value * bytes_per_value(pixels), band,
                    workspace};
  instruction_set().band(job, pixels);
}

const char* reconstruct_instruction_set() noexcept { return instruction_set().name; }

}  // namespace svdserve
