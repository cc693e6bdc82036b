#!/usr/bin/env bash
# Builds bundle/quick.tar.xz for run-on-device.sh and ncu-profile.sh: main's kernel benchmark and
# GPU kernel tests, and the warp-specialised kernels of patches/ (applied onto main's working
# tree, then restored), each as bench_<name> (and tests_<name>):
#   turns:     patches 1-2  (one ring shared by both consumers, which take turns)
#   ws:        patches 1-3  (a ring per consumer)
#   coop:      patches 1-6  (tile pairs share V: both consumers on one ring)
#   noepi3:    patches 1-5 (ws) with SVDSERVE_EXP_NO_EPILOGUE, 3 stages a consumer (timing only)
#   noepi6:    the same with 6 stages
#   coopnoepi: coop with SVDSERVE_EXP_NO_EPILOGUE (timing only)
#   coopnostream: patches 1-7, coop with SVDSERVE_EXP_NO_STREAM (timing only)
# and, prepared in session 18 and not yet measured (run-on-device.sh next):
#   coopil:    patches 1-9, coop with SVDSERVE_EXP_INTERLEAVE (the accumulator sets alternate)
#   coop2g:    coop with SVDSERVE_EXP_TWO_GROUPS (two steps' wgmma groups in flight)
#   coopil2g:  both
# Test binaries (tests_<name>) for the variants in WITH_TESTS (default below); the timing-only
# ones fail their checks by design.
# Run from the repository root of a clean checkout of main, after `cmake --preset portable` and
# `.ci/bundle.sh` (its lib/ is copied). 1-3 minutes a variant on 2 cores (about 25 in all).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
here=docs/experiments/session-18
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-18
rm -rf "$stage" && mkdir -p "$stage/svdserve/bin" "$stage/svdserve/lib" "$stage/svdserve/tests/data"
restore() { git checkout -- kernels tests; }
trap restore EXIT

with_tests=" ${WITH_TESTS:-main ws coop coopil coop2g coopil2g} "

build_variant() {  # name, the number of patches to apply, then the macros to define
  local name=$1 patches=$2
  shift 2
  restore
  for p in $(ls "$here"/patches/*.patch | head -n "$patches"); do git apply "$p"; done
  local defines=""
  for macro in "$@"; do defines+="#define $macro"$'\n'; done
  printf '%s' "$defines" | cat - "$kernel" > "$kernel.new" && mv "$kernel.new" "$kernel"
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  if [[ "$with_tests" == *" $name "* ]]; then
    cp "$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)" \
       "$stage/svdserve/bin/tests_$name"
  fi
}

build_variant main 0
build_variant turns 2
build_variant ws 3
build_variant coop 6
build_variant noepi3 5 "SVDSERVE_EXP_NO_EPILOGUE 1" "SVDSERVE_EXP_RING_STAGES 3"
build_variant noepi6 5 "SVDSERVE_EXP_NO_EPILOGUE 1" "SVDSERVE_EXP_RING_STAGES 6"
build_variant coopnoepi 6 "SVDSERVE_EXP_NO_EPILOGUE 1"
build_variant coopnostream 7 "SVDSERVE_EXP_NO_STREAM 1"
build_variant coopil 9 "SVDSERVE_EXP_INTERLEAVE 1"
build_variant coop2g 9 "SVDSERVE_EXP_TWO_GROUPS 1"
build_variant coopil2g 9 "SVDSERVE_EXP_INTERLEAVE 1" "SVDSERVE_EXP_TWO_GROUPS 1"
restore
cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests

# The test binaries need the images and, from the bundle's lib/, what the system lacks there.
cp -r tests/data/images "$stage/svdserve/tests/data/"
cp -a bundle/svdserve/lib/. "$stage/svdserve/lib/"
strip "$stage"/svdserve/bin/*
mkdir -p bundle
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick.tar.xz
ls -la bundle/quick.tar.xz
