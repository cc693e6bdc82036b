#include "kernels/gpu/reconstruct/output_tensor_map.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "kernels/errors.hpp"
#include "kernels/gpu/common/cuda_check.hpp"
#include "kernels/gpu/reconstruct/fused.hpp"

namespace svdserve::gpu {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver the runtime loaded, looked up once (12.0's signature,
// the one this file calls).
EncodeTiled encode_tiled() {
  static const EncodeTiled function = [] {
    void* address = nullptr;
    cudaDriverEntryPointQueryResult found{};
    SVDSERVE_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &address,
                                                         12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || address == nullptr) {
      throw InternalError("the CUDA driver has no cuTensorMapEncodeTiled (it needs CUDA 12)");
    }
    return reinterpret_cast<EncodeTiled>(address);
  }();
  return function;
}

}  // namespace

bool encode_output_map(ReconstructTask& task, const ImageShape& shape) {
  task.out_map_encoded = 0;
  const uint64_t row_bytes = uint64_t{shape.width} * shape.channels;
  const uint64_t tile_columns = shape.width / kOutputTileCols;  // whole ones
  if (reinterpret_cast<std::uintptr_t>(task.out) % kOutputMapAlignment != 0 ||
      row_bytes % kOutputMapAlignment != 0 || tile_columns == 0 || shape.height == 0) {
    return false;
  }
  constexpr uint32_t kWord = sizeof(uint32_t);  // the elements: 32-bit words of 4 bytes
  const uint64_t tile_row_bytes = uint64_t{kOutputTileCols} * shape.channels;
  const cuuint64_t dims[] = {tile_row_bytes / kWord, tile_columns, shape.height};
  // Of dimensions 1 and 2. Not nested where the width is not whole tiles (row_bytes is then not
  // a multiple of tile_columns * tile_row_bytes): the encoder requires multiples of 16 only,
  // and the tile columns simply stop short of the row's end.
  const cuuint64_t strides[] = {tile_row_bytes, row_bytes};
  const cuuint32_t box[] = {output_staging_pitch(shape.channels) / kWord, 1, kOutputTileRows};
  const cuuint32_t element_strides[] = {1, 1, 1};
  const CUresult result = encode_tiled()(
      &task.out_map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, task.out, dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    detail::throw_driver_error(static_cast<int>(result),
                               "cuTensorMapEncodeTiled refused the output of a " +
                                   std::to_string(shape.width) + " x " +
                                   std::to_string(shape.height) + " x " +
                                   std::to_string(shape.channels) + " image (CUresult " +
                                   std::to_string(static_cast<int>(result)) + ")");
  }
  task.out_map_encoded = 1;
  return true;
}

}  // namespace svdserve::gpu
