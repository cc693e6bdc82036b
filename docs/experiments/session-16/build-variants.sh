#!/usr/bin/env bash
# Builds bundle/quick.tar.xz for run-on-device.sh: main's kernel benchmark (with the FP16 GEMM
# reference) and the step-sync patch's five variants, each as a benchmark and a GPU kernel test
# binary. Run from the repository root of a clean checkout of main, after `cmake --preset
# portable` and `.ci/bundle.sh` (its lib/ is copied); the kernel source is restored at the end.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin" "$stage/svdserve/lib" "$stage/svdserve/tests/data"
trap 'git checkout -- "$kernel"' EXIT

build_variant() {  # name, then the macros to define (none: main)
  local name=$1
  shift
  git checkout -- "$kernel"
  if [ $# -gt 0 ]; then
    git apply docs/experiments/session-16/step-sync.patch
    local defines=""
    for macro in "$@"; do defines+="#define $macro 1"$'\n'; done
    printf '%s' "$defines" | cat - "$kernel" > "$kernel.new" && mv "$kernel.new" "$kernel"
  fi
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  cp "$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)" \
     "$stage/svdserve/bin/tests_$name"
}

build_variant main
build_variant defer SVDSERVE_EXP_DEFER_FILL
build_variant arrive SVDSERVE_EXP_ARRIVE_BARRIER
build_variant both SVDSERVE_EXP_DEFER_FILL SVDSERVE_EXP_ARRIVE_BARRIER
build_variant warpout SVDSERVE_EXP_WARP_COPY_OUT
build_variant warploop SVDSERVE_EXP_WARP_COPY_OUT SVDSERVE_EXP_LOOP_FROM_RANK
git checkout -- "$kernel"
cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests

# The test binaries need the images and, from the bundle's lib/, what the system lacks there.
cp -r tests/data/images "$stage/svdserve/tests/data/"
cp -a bundle/svdserve/lib/. "$stage/svdserve/lib/"
strip "$stage"/svdserve/bin/*
mkdir -p bundle
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick.tar.xz
ls -la bundle/quick.tar.xz
