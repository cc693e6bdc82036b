#!/usr/bin/env bash
# Builds session 22's second round of variants (call 7) into bundle/quick22d.tar.xz, from a tree
# with two experiment switches in reconstruct_fused_wgmma.cu (5a341fc with
# patches/round2-switches.patch applied: git apply docs/experiments/session-22/patches/...):
#   acq:   kAcquireOncePerTask only: a consumer's issuing thread acquires a task's output map
#          when its pair's task differs from the last one it acquired (ncu, call 6: the
#          acquire, UTMACCTL.IV, held 3.4 % of the stall samples at 4096², k = 16)
#   split: kSplitLastStep only: a channel's last step commits its top half's wgmmas as a group
#          of their own, and the top is rounded while the bottom's still run (call 1's `split`
#          did so at every step)
#   both:  both (with the GPU kernel tests)
#   none:  neither (main at 5a341fc, but its post-loop code in the variants' order)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-22d
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin"
cp "$kernel" /tmp/quick22d-kernel.cu
restore() { cp /tmp/quick22d-kernel.cu "$kernel"; }
trap restore EXIT
tests=$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)
set_switch() {  # name, value
  sed -i "s|^constexpr bool $1 = [a-z]*;|constexpr bool $1 = $2;|" "$kernel"
  grep -q "^constexpr bool $1 = $2;" "$kernel"
}
for name in ${VARIANTS:-none acq split both}; do
  restore
  set_switch kAcquireOncePerTask "$([[ $name == acq || $name == both ]] && echo true || echo false)"
  set_switch kSplitLastStep "$([[ $name == split || $name == both ]] && echo true || echo false)"
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  [[ $name == both ]] && cp "$tests" "$stage/svdserve/bin/tests_$name"
done
restore
strip "$stage"/svdserve/bin/*
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > "${OUTPUT:-bundle/quick22d.tar.xz}"
ls -la "${OUTPUT:-bundle/quick22d.tar.xz}"
