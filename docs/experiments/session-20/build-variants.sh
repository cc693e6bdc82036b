#!/usr/bin/env bash
# Builds session 20's variants of main's wgmma kernel into bundle/quick20.tar.xz (the bench and,
# for those named in TESTS, the GPU kernel tests), for run-on-device.sh. Run from the repository
# root of a checkout of main with build-portable built (.ci/bundle.sh):
#   held0: patch 14 with SVDSERVE_EXP_HELD=0: a producer warpgroup (384 threads) instead of a
#          producer warp, setmaxnreg 40 / 232; the kernel otherwise main's
#   held1: the same, channel 0 kept in registers until channel 1 (the wait for the staging moves
#          from channel 0's rounding to channel 1's)
#   held2: channels 0 and 1 kept in registers until channel 2
# VARIANTS="name:MACRO=VALUE,..." overrides the list.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-20
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin"
restore() { git checkout -- kernels; }
trap restore EXIT

for spec in ${VARIANTS:-held0:SVDSERVE_EXP_HELD=0 held1:SVDSERVE_EXP_HELD=1 held2:SVDSERVE_EXP_HELD=2}; do
  IFS=: read -r name macros <<< "$spec"
  restore
  git apply docs/experiments/session-20/patches/0014-*.patch
  defines=""
  for macro in ${macros//,/ }; do defines+="#define ${macro/=/ }"$'\n'; done
  printf '%s' "$defines" | cat - "$kernel" > "$kernel.new" && mv "$kernel.new" "$kernel"
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  if [[ " ${TESTS:-held1 held2} " == *" $name "* ]]; then
    cp "$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)" "$stage/svdserve/bin/tests_$name"
  fi
  strip "$stage"/svdserve/bin/*_"$name"
done
restore
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick20.tar.xz
ls -la bundle/quick20.tar.xz
