#pragma once
// Decoded samples -> the solver's float32 matrices, on the device: the decompose path copies the
// decoder's 1- or 2-byte samples over PCIe (not 4-byte floats) and turns them into matrices here,
// transposing on the way when the solver needs it. Compiles without nvcc.

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

// samples: `count` images of `shape`, interleaved (HWC) samples of `type`, back to back.
// matrices: count * channels float matrices of shape.pixels_per_channel() each, matrix
//   (image i, channel c) at index i * channels + c, values scaled by sample_scale(type):
//   transpose == false: the row-major height x width plane (= column-major width x height);
//   transpose == true:  column-major height x width.
// norms_squared: count * channels doubles, zeroed by the caller; each gets the sum of squares of
//   its matrix (NaN or infinity when a sample is not finite).
void launch_convert_samples(const void* samples, SampleType type, const ImageShape& shape,
                            int count, bool transpose, float* matrices, double* norms_squared,
                            StreamView stream);

}  // namespace svdserve::gpu
