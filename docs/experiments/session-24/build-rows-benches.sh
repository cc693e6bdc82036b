#!/usr/bin/env bash
# Builds the quick bundle of session 24's `rows` experiments from build-portable (.ci/bundle.sh
# must have run once), from the repository root: the reconstruction benchmark with the rows
# kernel's switches of rows-switches.patch (kIterations, an L1 prefetch of the next iteration's
# factors, the unrolling of a thread's 4 rows) set to
#   NAME:ITERATIONS:PREFETCH:UNROLL, default base:2:0:4 p2:2:1:4 p4:4:1:4 i4:4:0:4 p8:8:1:4
# (call 2; call 3 built VARIANTS="base:2:0:4 u1:2:0:1 u2:2:0:2 u1i4:4:0:1")
# -> bench_NAME in bundle/quick24.tar.xz (run with the libraries of bundle/svdserve.tar.xz).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
file=kernels/gpu/reconstruct_fused_rows.cu
stage=/tmp/svdserve-quick-24/svdserve/bin
rm -rf "$stage" && mkdir -p "$stage"
# The trap below restores the kernel file from HEAD: refuse to run over uncommitted edits to it.
git diff --quiet HEAD -- $file || { echo "$file has uncommitted changes" >&2; exit 1; }
git apply docs/experiments/session-24/rows-switches.patch
cp $file /tmp/rows-kernel.cu
restore() { git checkout HEAD -- $file; }
trap restore EXIT
for variant in ${VARIANTS:-base:2:0:4 p2:2:1:4 p4:4:1:4 i4:4:0:4 p8:8:1:4}; do
  IFS=: read -r name iterations prefetch unroll <<< "$variant"
  sed -e "s/^#define SVDSERVE_ROWS_ITERATIONS .*/#define SVDSERVE_ROWS_ITERATIONS $iterations/" \
      -e "s/^#define SVDSERVE_ROWS_PREFETCH .*/#define SVDSERVE_ROWS_PREFETCH $prefetch/" \
      -e "s/^#define SVDSERVE_ROWS_UNROLL .*/#define SVDSERVE_ROWS_UNROLL ${unroll:-4}/" \
      /tmp/rows-kernel.cu > $file
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench > /tmp/build-$name.log 2>&1 ||
    { tail -30 /tmp/build-$name.log; exit 1; }
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/bench_$name"
done
strip --strip-unneeded "$stage"/*
tar -C /tmp/svdserve-quick-24 -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick24.tar.xz
ls -la bundle/quick24.tar.xz
