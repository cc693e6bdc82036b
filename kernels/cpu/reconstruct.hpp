#pragma once
// Rank-k reconstruction U_k diag(S_k) Vt_k on the CPU (cblas_sgemm), written as HWC pixels.

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/aligned_vector.hpp"
#include "kernels/cpu/factors.hpp"
#include "kernels/image.hpp"

namespace svdserve {

// Scratch one worker reuses for every band: grows to the largest band seen, never shared.
struct ReconstructWorkspace {
  AlignedVector<float> scaled_u;  // row_count x rank: the band's rows of U_k diag(S_k)
  AlignedVector<float> planes;    // channels x row_count x width, planar
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

}  // namespace svdserve
