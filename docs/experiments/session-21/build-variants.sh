#!/usr/bin/env bash
# Builds session 21's variants of the wgmma kernel into bundle/quick21.tar.xz for
# run-on-device.sh. Run from the repository root of a checkout with build-portable built
# (.ci/bundle.sh), with the tensor-map store in the working tree:
#   tma:     the working tree (the bench, and the GPU kernel tests)
#   nostore: the same without the tensor stores themselves (the tiles are rounded into their
#            boxes, fenced and synchronised, but never stored): how far the store is from free
#            (built from the tree at 22a5411; its sed does not match later trees)
#   perm:    the working tree at the second experiment (V's columns permuted so that a row's four
#            threads hold adjacent pixels), with its GPU kernel tests:
#            VARIANTS=perm OUTPUT=bundle/quick21c.tar.xz, with bench_final (the bundle of 22a5411)
#            added by hand, as bench_main was to quick21b.
#   stag1, stag3: the final kernel with consumer 1 started 2 or 4 steps behind consumer 0
#            instead of 3 (stagger_steps 1 or 3 instead of 2; bench only):
#            VARIANTS="stag1 stag3" OUTPUT=bundle/quick21e.tar.xz
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-21
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin"
cp "$kernel" /tmp/quick21-kernel.cu
restore() { cp /tmp/quick21-kernel.cu "$kernel"; }
trap restore EXIT
tests=$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)

for name in ${VARIANTS:-tma nostore}; do
  restore
  if [[ $name == nostore ]]; then
    grep -q 'tensor_store_tile<kChannels>(\*work' "$kernel"  # the tree at 22a5411
    sed -i 's|if (thread == 0) tensor_store_tile<kChannels>(\*work.task, tile, staging, width);||' "$kernel"
    ! grep -q 'tensor_store_tile<kChannels>(\*work' "$kernel"
  fi
  if [[ $name == stag* ]]; then
    sed -i "s|return std::min<uint32_t>(2, kStages - 1);|return std::min<uint32_t>(${name#stag}, kStages - 1);|" "$kernel"
    grep -q "return std::min<uint32_t>(${name#stag}, kStages - 1);" "$kernel"
  fi
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  [[ $name == tma || $name == perm ]] && cp "$tests" "$stage/svdserve/bin/tests_$name"
done
restore
strip "$stage"/svdserve/bin/*
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > "${OUTPUT:-bundle/quick21.tar.xz}"
ls -la "${OUTPUT:-bundle/quick21.tar.xz}"
