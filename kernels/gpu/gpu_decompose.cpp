#include "kernels/gpu/gpu_decompose.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kernels/errors.hpp"
#include "kernels/gpu/svd/convert_samples.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/gpu_factors.hpp"
#include "kernels/gpu/reconstruct/wgmma_operands.hpp"
#include "kernels/trace.hpp"

namespace svdserve::gpu {
namespace {

const ImageShape& common_shape(std::span<const DecodedImage* const> images) {
  for (const DecodedImage* image : images) {
    if (image == nullptr) throw InvalidArgument("decompose got a null image");
  }
  const ImageShape& shape = images.front()->shape;
  for (const DecodedImage* image : images) {
    if (!(image->shape == shape)) throw InternalError("a GPU batch mixed image shapes");
    if (image->is_jpeg()) continue;  // decoded on the device, to its header's shape
    if (image->samples.size() != shape.values() * bytes_per_sample(image->type)) {
      throw InternalError("a decoded image's sample count does not match its shape");
    }
  }
  return shape;
}

// Bytes an image occupies in the device input buffer: its samples, as decoded.
[[nodiscard]] std::size_t device_sample_bytes(const DecodedImage& image) noexcept {
  return image.is_jpeg() ? image.shape.values() : image.samples.size();
}

// Puts every image's samples into the device input buffer: host samples through pinned staging
// (one copy per contiguous run), JPEGs by decoding them there with nvJPEG. Then converts them
// into the solver's matrices (transposed when `transpose`). Fills `norms_squared` (host) with
// each matrix's ||A||_F^2 and rejects non-finite samples. Synchronises the stream once.
void upload_matrices(StreamContext& context, std::span<const DecodedImage* const> images,
                     bool transpose, const JpegDecoding& jpeg, std::vector<double>& norms_squared) {
  trace::ScopedRange stage("h2d_convert");
  const ImageShape& shape = images.front()->shape;
  const StreamView stream = context.stream.view();
  // Each run of images with one sample type starts 16-byte aligned on the device, so that a
  // u16 or f32 run after an odd-sized u8 image is read from aligned addresses.
  constexpr std::size_t kRunAlignment = 16;
  struct Run {
    std::size_t first, last, offset;
  };
  std::vector<Run> runs;
  std::vector<std::size_t> offsets(images.size());
  std::size_t input_bytes = 0;
  for (std::size_t first = 0; first < images.size();) {
    std::size_t last = first;
    input_bytes = (input_bytes + kRunAlignment - 1) / kRunAlignment * kRunAlignment;
    const std::size_t offset = input_bytes;
    while (last < images.size() && images[last]->type == images[first]->type) {
      offsets[last] = input_bytes;
      input_bytes += device_sample_bytes(*images[last++]);
    }
    runs.push_back({first, last, offset});
    first = last;
  }
  context.staging_in.grow_to(input_bytes);
  context.input.grow_to(input_bytes);
  std::byte* staged = context.staging_in.as<std::byte>();
  std::byte* device_input = context.input.as<std::byte>();
  std::vector<JpegToDecode> jpegs;
  // Host samples: staged, then copied in spans of consecutive host images.
  std::size_t span_begin = 0, span_end = 0;
  const auto copy_span = [&] {
    if (span_end > span_begin) {
      SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(device_input + span_begin, staged + span_begin,
                                          span_end - span_begin, cudaMemcpyHostToDevice,
                                          stream.value()));
    }
  };
  for (std::size_t i = 0; i < images.size(); ++i) {
    const DecodedImage& image = *images[i];
    if (image.is_jpeg()) {
      jpegs.push_back({image.jpeg, device_input + offsets[i]});
      continue;
    }
    std::memcpy(staged + offsets[i], image.samples.data(), image.samples.size());
    if (offsets[i] != span_end) {
      copy_span();
      span_begin = offsets[i];
    }
    span_end = offsets[i] + image.samples.size();
  }
  copy_span();
  if (!jpegs.empty()) {
    if (jpeg.decoder == nullptr || jpeg.state == nullptr) {
      throw InternalError("a JPEG reached a GPU backend that has no JPEG decoder");
    }
    jpeg.decoder->decode(*jpeg.state, jpegs, shape.width, shape.channels, stream.value());
  }

  const std::size_t matrices = images.size() * shape.channels;
  const std::size_t norms_bytes = matrices * sizeof(double);
  context.matrices.grow_to(matrices * shape.pixels_per_channel() * sizeof(float));
  context.norms.grow_to(norms_bytes);
  SVDSERVE_CUDA_CHECK(cudaMemsetAsync(context.norms.data(), 0, norms_bytes, stream.value()));
  for (const Run& run : runs) {
    launch_convert_samples(device_input + run.offset, images[run.first]->type,
                           shape, static_cast<int>(run.last - run.first), transpose,
                           context.matrices.as<float>() + run.first * shape.values(),
                           context.norms.as<double>() + run.first * shape.channels, stream);
  }
  context.staging_out.grow_to(norms_bytes);
  SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context.staging_out.data(), context.norms.data(), norms_bytes,
                                      cudaMemcpyDeviceToHost, stream.value()));
  stream.synchronize();
  const double* norms = context.staging_out.as<double>();
  norms_squared.assign(norms, norms + matrices);
  for (std::size_t i = 0; i < matrices; ++i) {
    if (!std::isfinite(norms_squared[i])) {
      throw InvalidArgument("image " + std::to_string(i / shape.channels) +
                            " of the batch has a NaN or infinite value in channel " +
                            std::to_string(i % shape.channels));
    }
    if (std::sqrt(norms_squared[i]) > kMaxPlaneFrobeniusNorm) {
      throw values_too_large(i / shape.channels, static_cast<uint32_t>(i % shape.channels));
    }
  }
}

}  // namespace

DecomposeOutcome decompose_batch(StreamContext& context,
                                 std::span<const DecodedImage* const> images, uint32_t rank,
                                 SvdMethod method, DeviceMemoryPool& pool,
                                 bool with_wgmma_operands, const JpegDecoding& jpeg) {
  const ImageShape shape = common_shape(images);
  // Before the solver runs: the operands' layout must suit the kernel (it throws if not).
  if (with_wgmma_operands) check_wgmma_operand_layout(WgmmaOperandLayout{shape, rank});
  const StreamView stream = context.stream.view();
  // A row-major h x w plane is a column-major w x h matrix. cuSOLVER wants m >= n: wide and
  // square planes go as they are (m = w); tall ones are transposed by the conversion (m = h).
  const bool wide = shape.width >= shape.height;
  const int m = static_cast<int>(wide ? shape.width : shape.height);
  const int n = static_cast<int>(wide ? shape.height : shape.width);
  std::vector<double> norms_squared;
  upload_matrices(context, images, /*transpose=*/!wide, jpeg, norms_squared);

  const std::size_t matrices = images.size() * shape.channels;
  context.u.grow_to(matrices * m * rank * sizeof(float));
  context.s.grow_to(matrices * rank * sizeof(float));
  context.v.grow_to(matrices * n * rank * sizeof(float));
  const SvdBatch batch{m, n, static_cast<int>(matrices), static_cast<int>(rank),
                       context.matrices.as<float>(), context.u.as<float>(),
                       context.s.as<float>(), context.v.as<float>(), norms_squared};
  DecomposeOutcome outcome;
  outcome.report = context.solver.solve(batch, method);

  // Solver U is m x r, V is n x r. Wide: the image's V is the solver's U (m = w) and its US is
  // the solver's V (n = h) scaled by S; tall: the other way round.
  const float* us_source = wide ? context.v.as<float>() : context.u.as<float>();
  const float* v_source = wide ? context.u.as<float>() : context.v.as<float>();
  const int h = static_cast<int>(shape.height);
  const int w = static_cast<int>(shape.width);
  const int r = static_cast<int>(rank);
  std::vector<DeviceAllocation> allocations;
  allocations.reserve(images.size());
  std::vector<bool> has_operands(images.size());
  {
    trace::ScopedRange stage("store_factors");
    for (std::size_t i = 0; i < images.size(); ++i) {
      // |US[i][k]| is at most its channel's Frobenius norm: the bound the operands' scale needs.
      double largest_norm_squared = 0.0;
      for (uint32_t c = 0; c < shape.channels; ++c) {
        largest_norm_squared =
            std::max(largest_norm_squared, norms_squared[i * shape.channels + c]);
      }
      const std::optional<int> exponent =
          with_wgmma_operands ? wgmma_operand_exponent(std::sqrt(largest_norm_squared))
                              : std::nullopt;
      has_operands[i] = exponent.has_value();
      allocations.push_back(
          pool.allocate(GpuFactors::bytes_for(shape, rank, has_operands[i]), stream));
      float* us_out = allocations.back().floats();
      float* v_out = us_out + std::size_t{shape.channels} * h * r;
      for (uint32_t c = 0; c < shape.channels; ++c) {
        const std::size_t index = i * shape.channels + c;
        SVDSERVE_CUBLAS_CHECK(cublasSdgmm(context.cublas.value(), CUBLAS_SIDE_RIGHT, h, r,
                                          us_source + index * h * r, h,
                                          context.s.as<float>() + index * r, 1,
                                          us_out + c * std::size_t(h) * r, h));
        SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(v_out + c * std::size_t(w) * r,
                                            v_source + index * w * r, sizeof(float) * w * r,
                                            cudaMemcpyDeviceToDevice, stream.value()));
      }
      if (exponent) GpuFactors::write_wgmma_operands(us_out, shape, rank, *exponent, stream);
    }
    context.staging_out.grow_to(matrices * rank * sizeof(float));
    SVDSERVE_CUDA_CHECK(cudaMemcpyAsync(context.staging_out.data(), context.s.data(),
                                        matrices * rank * sizeof(float), cudaMemcpyDeviceToHost,
                                        stream.value()));
    stream.synchronize();
  }

  outcome.factors.reserve(images.size());
  const float* s_host = context.staging_out.as<float>();
  // The spectra are on the host already: a non-finite one is refused, whatever overflowed.
  for (std::size_t i = 0; i < matrices * rank; ++i) {
    if (!std::isfinite(s_host[i])) {
      const std::size_t matrix = i / rank;
      throw values_too_large(matrix / shape.channels,
                             static_cast<uint32_t>(matrix % shape.channels));
    }
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    std::vector<std::vector<float>> spectra(shape.channels);
    double energy = 0.0;
    for (uint32_t c = 0; c < shape.channels; ++c) {
      const float* first = s_host + (i * shape.channels + c) * rank;
      spectra[c].assign(first, first + rank);
      energy += norms_squared[i * shape.channels + c];
    }
    outcome.factors.push_back(std::make_shared<GpuFactors>(shape, rank, std::move(spectra), energy,
                                                           std::move(allocations[i]),
                                                           has_operands[i]));
  }
  return outcome;
}

}  // namespace svdserve::gpu
