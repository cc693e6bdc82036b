#pragma once
// cuSOLVER's batched approximate SVD (gesvdaStridedBatched): the top `rank` triplets of every
// matrix of a batch in one call. It is approximate by design, so each result is checked: an exact
// partial SVD satisfies ||A||_F^2 = sum(S_k^2) + ||A - U_k S_k V_k^T||_F^2, with the residual
// reported by cuSOLVER. The caller redoes the matrices that fail with an exact solver.

#include <cusolverDn.h>

#include <vector>

#include "kernels/gpu/common/cuda_resources.hpp"
#include "kernels/gpu/svd/svd_batch.hpp"

namespace svdserve::gpu {

// Relative tolerance of the residual identity, for fp32.
inline constexpr double kGesvdaIdentityTolerance = 2e-5;

// Buffers a call grows to its batch and leaves for the next; the caller may lend them to other
// solvers in between.
struct GesvdaScratch {
  DeviceBuffer& work;
  DeviceBuffer& info;
  PinnedBuffer& host;
};

// Fills batch.u, batch.s and batch.v, then checks every matrix (by cuSOLVER's info alone when
// batch.norms_squared is empty). Adds to report's checked, failed_check, info_failures and
// identity-error range. Returns the indices of the matrices that failed. Synchronises `stream`.
[[nodiscard]] std::vector<int> gesvda_batched(const SvdBatch& batch, StreamView stream,
                                              cusolverDnHandle_t cusolver, GesvdaScratch scratch,
                                              SvdReport& report);

}  // namespace svdserve::gpu
