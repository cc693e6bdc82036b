#!/usr/bin/env bash
# Builds the benchmark of main before session 22 (d220595's kernel files) and of the working tree
# into bundle/quick22c.tar.xz (bench_main, bench_new), for run-on-device.sh tables: the full
# kernel table of both in one call, so that both meet the same clock. Run from the repository
# root of a checkout with build-portable built (.ci/bundle.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
files="kernels/gpu/output_tensor_map.hpp kernels/gpu/output_tensor_map.cpp kernels/gpu/reconstruct_fused_wgmma.cu kernels/gpu/tensor_store.cuh"
stage=/tmp/svdserve-quick-22c
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin"
restore() { git checkout HEAD -- $files; }
trap restore EXIT
git checkout d220595 -- $files
cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench
cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_main"
restore
cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench
cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_new"
strip "$stage"/svdserve/bin/*
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > "${OUTPUT:-bundle/quick22c.tar.xz}"
ls -la "${OUTPUT:-bundle/quick22c.tar.xz}"
