#pragma once
// One decompose batch on one leased stream: decoded samples up to the device (or JPEGs decoded
// there), converted to the
// solver's matrices there, cuSOLVER (svd/solver.hpp), then each image's factors into its own pool
// allocation in the layout of gpu_factors.hpp. Synchronous: the singular values come back to the
// host (they go into every response).

#include <memory>
#include <span>
#include <vector>

#include "kernels/factors.hpp"
#include "kernels/gpu/common/device_memory_pool.hpp"
#include "kernels/gpu/jpeg/jpeg_decoder.hpp"
#include "kernels/gpu/svd/solver.hpp"
#include "kernels/gpu/common/stream_pool.hpp"
#include "kernels/image.hpp"

namespace svdserve::gpu {

// The decoder for the batch's JPEGs (DecodedImage::jpeg) and its state for this stream; both
// null when the backend has no nvJPEG, and then no JPEG reaches it.
struct JpegDecoding {
  const JpegDecoder* decoder = nullptr;
  JpegStreamState* state = nullptr;
};

struct DecomposeOutcome {
  std::vector<std::shared_ptr<const Factors>> factors;  // one per image, in order
  SvdReport report;
};

// images: all of one shape (any sample types, or JPEGs that `jpeg` decodes). rank: 1..shape.full_rank().
// with_wgmma_operands: also write the factors as the wgmma kernel reads them (gpu_factors.hpp),
// for each image whose values FP16 operands can hold (wgmma_operand_exponent; the others get
// none and reconstruct on the tensor variant).
// Throws InvalidArgument for a non-finite sample, a JPEG nvJPEG cannot decode or,
// with_wgmma_operands, an image too large for the operands (check_wgmma_operand_layout),
// InternalError when the solver fails, ResourceExhausted when the pool cannot hold the factors.
[[nodiscard]] DecomposeOutcome decompose_batch(StreamContext& context,
                                               std::span<const DecodedImage* const> images,
                                               uint32_t rank, SvdMethod method,
                                               DeviceMemoryPool& pool, bool with_wgmma_operands,
                                               const JpegDecoding& jpeg);

}  // namespace svdserve::gpu
