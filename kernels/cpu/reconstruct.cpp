#include "kernels/cpu/reconstruct.hpp"

#include <cblas.h>

#include <cstring>

#include "kernels/pixel_rounding.hpp"

namespace svdserve {
namespace {

// Interleaves the planar band into HWC. One sequential pass over the output, which is what the
// memory system likes; the planar reads are streams too.
void write_u8(std::span<const float> planes, std::size_t band_values, uint32_t channels,
              std::byte* output) {
  auto* out = reinterpret_cast<uint8_t*>(output);
  for (std::size_t pixel = 0; pixel < band_values; ++pixel) {
    for (uint32_t channel = 0; channel < channels; ++channel) {
      out[pixel * channels + channel] = round_to_u8(planes[channel * band_values + pixel]);
    }
  }
}

void write_f32(std::span<const float> planes, std::size_t band_values, uint32_t channels,
               std::byte* output) {
  for (std::size_t pixel = 0; pixel < band_values; ++pixel) {
    for (uint32_t channel = 0; channel < channels; ++channel) {
      const float value = planes[channel * band_values + pixel];
      // The output buffer promises no float alignment; memcpy compiles to a plain store.
      std::memcpy(output + (pixel * channels + channel) * sizeof(float), &value, sizeof(float));
    }
  }
}

}  // namespace

void reconstruct_band(const CpuFactors& factors, uint32_t rank, OutputPixels pixels,
                      std::span<std::byte> output, RowBand band, ReconstructWorkspace& workspace) {
  const ImageShape& shape = factors.shape();
  const std::size_t rank_kept = factors.rank_kept();
  const std::size_t band_values = std::size_t{band.row_count} * shape.width;
  workspace.scaled_u.resize(std::size_t{band.row_count} * rank);
  workspace.planes.resize(band_values * shape.channels);

  for (uint32_t channel = 0; channel < shape.channels; ++channel) {
    const CpuChannelFactors& channel_factors = factors.channel(channel);
    const std::span<const float> singular_values = factors.singular_values(channel);
    // Fold S into a compact copy of the band's U_k: an h x k scaling instead of an h x w one.
    for (std::size_t row = 0; row < band.row_count; ++row) {
      const float* u_row = channel_factors.u.data() + (band.first_row + row) * rank_kept;
      float* scaled_row = workspace.scaled_u.data() + row * rank;
      for (std::size_t i = 0; i < rank; ++i) scaled_row[i] = u_row[i] * singular_values[i];
    }
    // Vt_k is the first k rows of Vt, so it is read in place with leading dimension width.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(band.row_count),
                static_cast<int>(shape.width), static_cast<int>(rank), 1.0F,
                workspace.scaled_u.data(), static_cast<int>(rank), channel_factors.vt.data(),
                static_cast<int>(shape.width), 0.0F,
                workspace.planes.data() + channel * band_values, static_cast<int>(shape.width));
  }

  const std::size_t first_value = std::size_t{band.first_row} * shape.width * shape.channels;
  const std::span<const float> planes(workspace.planes);
  if (pixels == OutputPixels::u8) {
    write_u8(planes, band_values, shape.channels, output.data() + first_value);
  } else {
    write_f32(planes, band_values, shape.channels, output.data() + first_value * sizeof(float));
  }
}

}  // namespace svdserve
