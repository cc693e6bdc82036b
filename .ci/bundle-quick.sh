#!/usr/bin/env bash
# A small bundle for one GPU iteration: only the named targets (rebuilt in build-portable), plus
# lib/ and tests/data from the last full bundle (.ci/bundle.sh must have run once). About 6 MiB
# and a minute here instead of 30 MiB and 5-7 minutes, e.g. for a kernel change:
#   .ci/bundle-quick.sh svdserve_reconstruct_bench svdserve_gpu_kernel_tests
#   device tool: carry ["bundle/quick.tar.xz"]; there:
#   mkdir -p /tmp/q && tar -C /tmp/q -xJf bundle/quick.tar.xz && /tmp/q/svdserve/bin/...
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: .ci/bundle-quick.sh TARGET..." >&2; exit 2; }
[ -d bundle/svdserve/lib ] || { echo "run .ci/bundle.sh once first (lib/ comes from it)" >&2; exit 2; }
cmake --build build-portable -j"${JOBS:-2}" --target "$@"
stage=bundle/quick/svdserve
rm -rf bundle/quick && mkdir -p "$stage/bin"
cp -a bundle/svdserve/lib bundle/svdserve/tests "$stage/"
for target in "$@"; do
  binary=$(find build-portable -type f -name "$target" -perm -u+x | head -1)
  [ -n "$binary" ] || { echo "no binary for target $target" >&2; exit 1; }
  cp "$binary" "$stage/bin/" && strip --strip-unneeded "$stage/bin/$target"
done
tar -C bundle/quick -cf - svdserve | xz -6 -T"${JOBS:-2}" > bundle/quick.tar.xz
echo "bundle: bundle/quick.tar.xz ($(du -h bundle/quick.tar.xz | cut -f1)): $*"
