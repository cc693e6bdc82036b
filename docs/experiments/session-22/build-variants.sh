#!/usr/bin/env bash
# Builds session 22's variants of the wgmma kernel into bundle/quick22*.tar.xz for
# run-on-device.sh. Run from the repository root of a checkout with build-portable built
# (.ci/bundle.sh).
#
# Call 1 (bundle/quick22.tar.xz, VARIANTS="halves skip split both") was built from the first
# experiment's tree, not kept: the swizzled boxes of session 21 with two switches,
# kSkipBottomPastImage (a tile's bottom 64 rows, where none is in the image, neither multiplied
# nor rounded) and kSplitChannelDrain (each step's top-half wgmmas a group of their own, the top
# rounded while the bottom's still run); every variant rounded the two 64-row halves by separate
# loops, which main shares each value's address between ("halves": neither switch; "both": both
# switches, with the GPU kernel tests).
#
# Call 3 (bundle/quick22b.tar.xz, the default): the working tree, one tensor store of pitched
# rows (output_tensor_map.hpp), with the kernel's one remaining switch:
#   pitched:        kSkipBottomPastImage on (with the GPU kernel tests)
#   pitched_noskip: kSkipBottomPastImage off
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-22
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin"
cp "$kernel" /tmp/quick22-kernel.cu
restore() { cp /tmp/quick22-kernel.cu "$kernel"; }
trap restore EXIT
tests=$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)
set_switch() {  # name, value
  sed -i "s|^constexpr bool $1 = [a-z]*;|constexpr bool $1 = $2;|" "$kernel"
  grep -q "^constexpr bool $1 = $2;" "$kernel"
}

for name in ${VARIANTS:-pitched pitched_noskip}; do
  restore
  set_switch kSkipBottomPastImage "$([[ $name == *noskip ]] && echo false || echo true)"
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  [[ $name == pitched ]] && cp "$tests" "$stage/svdserve/bin/tests_$name"
done
restore
strip "$stage"/svdserve/bin/*
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > "${OUTPUT:-bundle/quick22b.tar.xz}"
ls -la "${OUTPUT:-bundle/quick22b.tar.xz}"
