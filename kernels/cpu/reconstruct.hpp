#pragma once
// Rank-k reconstruction U_k diag(S_k) Vt_k on the CPU, fused: each tile of a few rows x a few
// hundred columns is computed for every channel by a small cblas_sgemm into cache-resident
// scratch, then rounded (u8) and interleaved into the HWC output from there. No float image is
// ever written.

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/image.hpp"

namespace svdserve {

// Scratch one worker reuses for every band: grows to the largest band seen, never shared.
struct ReconstructWorkspace {
  AlignedVector<float> scaled_u;  // channels x row_count x rank: the band's rows of U_k diag(S_k)
  AlignedVector<float> tile;            // channels x tile rows x tile columns: one tile's sums
  AlignedVector<uint8_t> rounded_tile;  // the same tile rounded to u8, before interleaving
};

// A run of whole image rows; bands let one image's reconstruction spread over several workers
// while each writes its own contiguous slice of the output.
struct RowBand {
  uint32_t first_row = 0;
  uint32_t row_count = 0;
};

// Writes the band's rows, all channels, into `output`, the HWC buffer of the whole image.
// The caller has checked rank (1..rank_kept), the band (inside the image) and output's size.
void reconstruct_band(const CpuFactors& factors, uint32_t rank, OutputPixels pixels,
                      std::span<std::byte> output, RowBand band, ReconstructWorkspace& workspace);

// The instruction set the fused kernel runs with on this CPU ("avx512", "avx2" or "sse2").
[[nodiscard]] const char* reconstruct_instruction_set() noexcept;

}  // namespace svdserve
