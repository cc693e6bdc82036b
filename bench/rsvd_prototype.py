#!/usr/bin/python3
"""Prototype of kernels/gpu/randomized_svd: the same algorithm in numpy, with the same precisions,
run on the real photos of tests/data/images (grey, resized to 256x256 and 1024x1024).

Evidence for the defaults in randomized_svd.hpp. For each (oversampling p, power iterations q)
it prints the worst rank-k error ratio ||A - U_k S_k V_k^T||_F / ||A - A_k||_F (optimal: float64
SVD) and the worst relative error of the top singular values, over all photos.

Precisions, as on the GPU:
  - fp32: A, the sketch Y = A Omega, every multiply by A or A^T, X R^-1, U = Q W, V = B^T W;
  - fp64: the Gram matrices X^T X (DGEMM of X converted to double), their Cholesky factor and its
    inverse (one thread block), B B^T and its Jacobi eigen-decomposition (one thread block).
Orthonormalisation is CholeskyQR with a float64 Gram: one pass is as accurate in range as the
fp32 product that made X; a second pass restores orthogonality to fp32 roundoff.

Usage: /usr/bin/python3 bench/rsvd_prototype.py [--quick]
"""
import glob
import os
import sys

import cv2
import numpy as np

IMAGES = os.path.join(os.path.dirname(__file__), "..", "data", "images")
# (oversampling, power iterations) tried. An earlier run also compared 1 and 2 CholeskyQR passes
# between power iterations: identical ratios, so the solver uses 1 there and 2 for the final basis.
# At 256^2 rank 64 (worst over the photos): p64 q3 1.000085, p48 q3 1.000396, p32 q4 1.000398,
# p32 q5 1.000118, p32 q3 1.001451 (fails): the smaller sketches the bench compares as variants.
GRID = ((16, 2), (16, 3), (32, 2), (32, 3), (32, 4), (32, 5), (48, 3), (64, 2), (64, 3))
PIVOT_TOLERANCE = 1e-13  # relative to the largest Gram diagonal: below it a column is dependent


def cholesky_inverse(x32):
    """R^-1 (fp32) with X^T X = R^T R, Gram and factor in float64; dependent columns -> zero."""
    x = x32.astype(np.float64)
    g = x.T @ x
    l = g.shape[0]
    r = np.zeros_like(g)
    dead = np.zeros(l, bool)
    limit = PIVOT_TOLERANCE * max(np.max(np.diag(g)), np.finfo(float).tiny)
    for j in range(l):
        d = g[j, j] - r[:j, j] @ r[:j, j]
        if d <= limit:
            dead[j] = True
            continue
        r[j, j] = np.sqrt(d)
        r[j, j + 1:] = (g[j, j + 1:] - r[:j, j] @ r[:j, j + 1:]) / r[j, j]
    rinv = np.zeros_like(r)
    live = ~dead
    rinv[np.ix_(live, live)] = np.linalg.inv(r[np.ix_(live, live)])
    return rinv.astype(np.float32)


def orthonormalise(x32, passes):
    for _ in range(passes):
        x32 = (x32 @ cholesky_inverse(x32)).astype(np.float32)
    return x32


def randomized_svd(a32, rank, oversampling, power_iterations, passes_between=1, passes_final=2,
                   seed=7):
    m, n = a32.shape
    l = min(rank + oversampling, n)
    omega = np.random.default_rng(seed).standard_normal((n, l)).astype(np.float32)
    last = power_iterations == 0
    q = orthonormalise(a32 @ omega, passes_final if last else passes_between)
    for i in range(power_iterations):
        z = orthonormalise(a32.T @ q, passes_between)
        last = i == power_iterations - 1
        q = orthonormalise(a32 @ z, passes_final if last else passes_between)
    b = (q.T @ a32).astype(np.float32)                      # l x n
    bd = b.astype(np.float64)
    lam, w = np.linalg.eigh(bd @ bd.T)                      # Jacobi on the GPU: same accuracy class
    order = np.argsort(lam)[::-1][:rank]
    s = np.sqrt(np.maximum(lam[order], 0.0))
    w32 = w[:, order].astype(np.float32)
    u = q @ w32
    v = b.T @ w32
    norms = np.linalg.norm(v.astype(np.float64), axis=0)
    v = (v / np.where(norms > 0, norms, 1)).astype(np.float32)
    return u, s.astype(np.float32), v


def load(size):
    out = []
    for path in sorted(glob.glob(os.path.join(IMAGES, "*"))):
        grey = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
        if grey is None:
            continue
        out.append((os.path.basename(path),
                    cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)))
    return out


def evaluate(images, refs, rank, p, q):
    worst_ratio, worst_sv = 0.0, 0.0
    for (name, a), (s_ref, opt_err, norm_a) in zip(images, refs):
        u, s, v = randomized_svd(a, rank, p, q)
        err = np.linalg.norm(a.astype(np.float64) - (u.astype(np.float64) * s) @ v.T.astype(np.float64))
        # Rank-deficient images (gradient.png): the optimum is ~0; judge against fp32 roundoff.
        floor = 1e-6 * norm_a
        ratio = err / max(opt_err, floor)
        top = min(rank, 8)
        sv = np.max(np.abs(s[:top] - s_ref[:top]) / s_ref[:top])
        worst_ratio, worst_sv = max(worst_ratio, ratio), max(worst_sv, sv)
    return worst_ratio, worst_sv


def main():
    quick = "--quick" in sys.argv
    for size in ((256,) if quick else (256, 1024)):
        images = load(size)
        refs = []
        for _, a in images:
            s_ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
            refs.append((s_ref, None, np.linalg.norm(s_ref)))
        for rank in (64, 128):
            refs_k = [(s, np.sqrt(np.sum(s[rank:] ** 2)), nrm) for s, _, nrm in refs]
            print(f"== {size}x{size}, rank {rank}, {len(images)} photos")
            print(f"{'p':>4} {'q':>3} {'worst err ratio':>16} {'worst top-8 sv rel':>19}")
            for p, q in GRID:
                if rank + p > size:
                    continue
                ratio, sv = evaluate(images, refs_k, rank, p, q)
                mark = "ok" if ratio <= 1.001 and sv <= 1e-4 else "--"
                print(f"{p:4d} {q:3d} {ratio:16.6f} {sv:19.2e}  {mark}", flush=True)


if __name__ == "__main__":
    main()
