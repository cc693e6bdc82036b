#include <algorithm>
#include <cstdint>

#include "kernels/gpu/svd/convert_samples.hpp"
#include "kernels/gpu/common/cuda_check.hpp"

namespace svdserve::gpu {
namespace {

constexpr int kTile = 32;       // pixels per tile side
constexpr int kBlockRows = 8;   // threads per block: kTile x kBlockRows, each does kTile/kBlockRows rows
constexpr int kWarps = kTile * kBlockRows / 32;

// One block converts a kTile x kTile pixel tile of one image, channel by channel. The tile goes
// through shared memory so that the transposed store is as coalesced as the plain one.
template <typename Sample>
__global__ void __launch_bounds__(kTile* kBlockRows)
    convert_samples(const Sample* __restrict__ samples, uint32_t width, uint32_t height,
                    uint32_t channels, float scale, bool transpose, float* __restrict__ matrices,
                    double* __restrict__ norms_squared) {
  __shared__ float tile[kTile][kTile + 1];  // +1: no bank conflicts when read column-wise
  __shared__ double warp_sums[kWarps];
  const uint32_t image = blockIdx.z;
  const uint32_t x0 = blockIdx.x * kTile;
  const uint32_t y0 = blockIdx.y * kTile;
  const std::size_t plane = std::size_t{width} * height;
  const Sample* in = samples + image * plane * channels;
  const int lane = threadIdx.x;  // 0..kTile-1
  const int warp = (threadIdx.y * kTile + threadIdx.x) / 32;

  for (uint32_t c = 0; c < channels; ++c) {
    double sum = 0.0;
    for (int row = threadIdx.y; row < kTile; row += kBlockRows) {
      const uint32_t x = x0 + lane, y = y0 + row;
      float value = 0.0f;
      if (x < width && y < height) {
        value = static_cast<float>(in[(std::size_t{y} * width + x) * channels + c]) * scale;
        sum += double{value} * value;
      }
      tile[row][lane] = value;
    }
    __syncthreads();
    float* out = matrices + (std::size_t{image} * channels + c) * plane;
    for (int row = threadIdx.y; row < kTile; row += kBlockRows) {
      if (!transpose) {  // row-major plane: consecutive threads take consecutive x
        const uint32_t x = x0 + lane, y = y0 + row;
        if (x < width && y < height) out[std::size_t{y} * width + x] = tile[row][lane];
      } else {  // column-major height x width: consecutive threads take consecutive y
        const uint32_t y = y0 + lane, x = x0 + row;
        if (x < width && y < height) out[std::size_t{x} * height + y] = tile[lane][row];
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if ((threadIdx.x & 31) == 0) warp_sums[warp] = sum;
    __syncthreads();  // also: the tile is free for the next channel
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      double block_sum = 0.0;
      for (int w = 0; w < kWarps; ++w) block_sum += warp_sums[w];
      atomicAdd(norms_squared + image * channels + c, block_sum);
    }
  }
}

template <typename Sample>
void launch(const void* samples, const ImageShape& shape, int count, float scale, bool transpose,
            float* matrices, double* norms_squared, StreamView stream) {
  constexpr int kMaxGridZ = 65535;  // images per launch (CUDA's limit on gridDim.z)
  const dim3 block(kTile, kBlockRows);
  for (int first = 0; first < count; first += kMaxGridZ) {
    const int images = std::min(kMaxGridZ, count - first);
    const dim3 grid((shape.width + kTile - 1) / kTile, (shape.height + kTile - 1) / kTile,
                    static_cast<unsigned>(images));
    convert_samples<Sample><<<grid, block, 0, stream.value()>>>(
        static_cast<const Sample*>(samples) + std::size_t(first) * shape.values(), shape.width,
        shape.height, shape.channels, scale, transpose,
        matrices + std::size_t(first) * shape.values(),
        norms_squared + std::size_t(first) * shape.channels);
    SVDSERVE_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

void launch_convert_samples(const void* samples, SampleType type, const ImageShape& shape,
                            int count, bool transpose, float* matrices, double* norms_squared,
                            StreamView stream) {
  const float scale = sample_scale(type);
  switch (type) {
    case SampleType::u8:
      launch<uint8_t>(samples, shape, count, scale, transpose, matrices, norms_squared, stream);
      break;
    case SampleType::u16:
      launch<uint16_t>(samples, shape, count, scale, transpose, matrices, norms_squared, stream);
      break;
    case SampleType::f32:
      launch<float>(samples, shape, count, scale, transpose, matrices, norms_squared, stream);
      break;
  }
}

}  // namespace svdserve::gpu
