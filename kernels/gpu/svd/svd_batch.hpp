#pragma once
// What every SVD solver of gpu/svd takes and reports: a batch of same-shaped fp32 matrices on
// the device, column-major m x n with m >= n (callers transpose wide/tall as needed).

#include <span>

namespace svdserve::gpu {

struct SvdBatch {
  int m = 0;
  int n = 0;          // m >= n
  int count = 0;
  int rank = 0;       // 1..n
  const float* a = nullptr;  // device: count matrices, stride m*n
  float* u = nullptr;        // device out: count x (m x rank), stride m*rank
  float* s = nullptr;        // device out: count x rank
  float* v = nullptr;        // device out: count x (n x rank), stride n*rank
  // Host: ||A_i||_F^2 of each matrix, for gesvda's residual check (may be empty for the other
  // methods; gesvda then trusts cuSOLVER's info alone).
  std::span<const double> norms_squared;
};

struct SvdReport {
  int checked = 0;
  int recomputed = 0;    // redone with Xgesvd (failed the gesvda check, or randomized could not)
  int failed_check = 0;  // outside kGesvdaIdentityTolerance
  double worst_identity_error = 0.0;   // max |(sum S^2 + R^2) / ||A||^2 - 1| before redo
  double best_identity_error = 1e300;  // the smallest of them (diagnostics)
  int info_failures = 0;               // gesvda info != 0
};

}  // namespace svdserve::gpu
