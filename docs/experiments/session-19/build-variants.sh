#!/usr/bin/env bash
# Adds session 19's variants to session 18's bundle (bundle/quick.tar.xz, from
# docs/experiments/session-18/build-variants.sh) and repacks it as bundle/quick19.tar.xz, keeping
# only main, coop and coopnostream of the old binaries (BASE=another bundle to start from):
#   coopnoround:  patches 1-11, coop with SVDSERVE_EXP_NO_ROUNDING (timing only: the MMAs and
#                 the operand stream, no rounding, no copy-out)
#   coopmma:      coop with SVDSERVE_EXP_NO_ROUNDING and SVDSERVE_EXP_NO_STREAM (timing only:
#                 the consumers' MMAs and waits alone)
#   coopstag2, coopstag4: patches 1-12, coop with SVDSERVE_EXP_STAGGER=2 or 4 (consumer 1 starts
#                 2 or 4 steps behind consumer 0), with its GPU kernel tests (tests_coopstag4)
# VARIANTS="name:patches:MACRO=VALUE,MACRO ..." overrides the list, TESTS="name ..." says which
# also get their test binary, KEEP which of the old binaries stay. Run from the repository root of a
# clean checkout of main with build-portable configured (`cmake --preset portable`).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=build-portable
kernel=kernels/gpu/reconstruct_fused_wgmma.cu
stage=/tmp/svdserve-quick-19
patches=$(ls docs/experiments/session-18/patches/*.patch docs/experiments/session-19/patches/*.patch)
rm -rf "$stage" && mkdir -p "$stage"
tar -C "$stage" -xJf "${BASE:-bundle/quick.tar.xz}"
keep=" ${KEEP:-main coop coopnostream} "
for f in "$stage"/svdserve/bin/*; do
  name=$(basename "$f"); name=${name#bench_}; name=${name#tests_}
  [[ "$keep" == *" $name "* ]] || rm "$f"
done
restore() { git checkout -- kernels tests; }
trap restore EXIT

for spec in ${VARIANTS:-coopnoround:11:SVDSERVE_EXP_NO_ROUNDING=1 coopmma:11:SVDSERVE_EXP_NO_ROUNDING=1,SVDSERVE_EXP_NO_STREAM=1 coopstag2:12:SVDSERVE_EXP_STAGGER=2 coopstag4:12:SVDSERVE_EXP_STAGGER=4}; do
  IFS=: read -r name count macros <<< "$spec"
  restore
  for p in $(echo "$patches" | head -n "$count"); do git apply "$p"; done
  defines=""
  for macro in ${macros//,/ }; do defines+="#define ${macro/=/ }"$'\n'; done
  printf '%s' "$defines" | cat - "$kernel" > "$kernel.new" && mv "$kernel.new" "$kernel"
  cmake --build "$build" -j"${JOBS:-2}" --target svdserve_reconstruct_bench svdserve_gpu_kernel_tests
  cp "$build/tests/bench/svdserve_reconstruct_bench" "$stage/svdserve/bin/bench_$name"
  if [[ " ${TESTS:-coopstag4} " == *" $name "* ]]; then
    cp "$(find "$build" -name svdserve_gpu_kernel_tests -type f | head -1)" "$stage/svdserve/bin/tests_$name"
  fi
  strip "$stage"/svdserve/bin/*_"$name"
done
restore
tar -C "$stage" -cf - svdserve | xz -T"${JOBS:-2}" -6 > bundle/quick19.tar.xz
ls -la bundle/quick19.tar.xz
