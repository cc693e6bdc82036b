#!/usr/bin/env bash
# Builds the quick bundles of session 23's calls from build-portable (.ci/bundle.sh must have run
# once), from the repository root: the reconstruction benchmark with the kernel file of
#   main  6f9ba54 (before the session)              -> bench_main  (bundle/quick23.tar.xz, calls 1, 2, 4)
#   side1 e7c3af9 (pairs' descriptors built per pair) -> bench_side1 (bundle/quick23b.tar.xz, call 3)
#   side2 4cac3ec (descriptors built once; landed)    -> bench_side2 and tests_side2 (quick23b)
# Calls 1, 2 and 4 took bench_new from the bundle of the commit named in docs/performance-log.md.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
file=kernels/gpu/reconstruct_fused_wgmma.cu
tests_file=tests/kernels/gpu_reconstruct_test.cpp
stage=/tmp/svdserve-quick-23/svdserve/bin
rm -rf "$stage" && mkdir -p "$stage"
restore() { git checkout HEAD -- $file $tests_file; }
trap restore EXIT
for variant in main:6f9ba54 side1:e7c3af9 side2:4cac3ec; do
  name=${variant%%:*}
  git checkout "${variant#*:}" -- $file $tests_file
  targets=svdserve_reconstruct_bench
  [ "$name" = side2 ] && targets="$targets svdserve_gpu_kernel_tests"
  cmake --build "$build" -j"${JOBS:-2}" --target $targets
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/bench_$name"
  [ "$name" = side2 ] && cp "$(find "$build" -name svdserve_gpu_kernel_tests -type f -perm -u+x | head -1)" "$stage/tests_side2"
done
strip --strip-unneeded "$stage"/*
tar -C /tmp/svdserve-quick-23 -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick23b.tar.xz
rm "$stage"/bench_side* "$stage"/tests_side2
tar -C /tmp/svdserve-quick-23 -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick23.tar.xz
ls -la bundle/quick23.tar.xz bundle/quick23b.tar.xz
