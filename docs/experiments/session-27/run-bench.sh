#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root
# (call 2): the four benchmarks of the performance issue on the bundle of main
# (.ci/device-bench.sh, all of them), then one more full kernel benchmark while time is left.
set -u
OUT=${OUT:-/tmp/out}
start=$SECONDS
timeout 480 bash .ci/device-bench.sh > "$OUT/device-bench.out" 2>&1
echo "device-bench rc=$? in $((SECONDS - start)) s"
grep -E '^=== |^correctness|^target' "$OUT/device-bench.out"
R=/tmp/svdserve-bundle/svdserve
if [ $((SECONDS - start)) -lt 450 ]; then
  LD_LIBRARY_PATH=$R/lib timeout 120 $R/bin/svdserve_reconstruct_bench > "$OUT/kernel-table-3.txt" 2>&1
  echo "kernel bench rc=$?: $(grep -E '^correctness|^target >= 80' "$OUT/kernel-table-3.txt" | tr '\n' ' ')"
fi
echo "all took $((SECONDS - start)) s"
