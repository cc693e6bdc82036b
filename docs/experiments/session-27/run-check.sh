#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root
# (call 1): .ci/device-check.sh on the bundle of main, then one more full kernel benchmark while
# the call has time left, so that the kernel's table has runs from two calls.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/check"
start=$SECONDS
OUT=$OUT/check timeout 420 bash .ci/device-check.sh > "$OUT/device-check.out" 2>&1
echo "device-check rc=$? in $((SECONDS - start)) s"; tail -25 "$OUT/device-check.out"
R=/tmp/svdserve-bundle/svdserve  # unpacked by device-check.sh
if [ $((SECONDS - start)) -lt 440 ]; then
  LD_LIBRARY_PATH=$R/lib timeout 120 $R/bin/svdserve_reconstruct_bench > "$OUT/kernel-table-1.txt" 2>&1
  echo "kernel bench rc=$?: $(grep -E '^correctness|^target >= 80' "$OUT/kernel-table-1.txt" | tr '\n' ' ')"
fi
cd "$OUT" && tar -cJf check.tar.xz check && rm -rf check
echo "all took $((SECONDS - start)) s"
