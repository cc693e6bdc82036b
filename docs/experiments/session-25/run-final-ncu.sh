#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root
# (call 9): the final kernel (rounding by the conversion instruction) under ncu at 4096², k = 256
# and 64: instructions per wgmma, tensor pipe activity, then its stall samples (run-stalls.sh).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/svdserve.tar.xz
B=/tmp/m/svdserve/bin/svdserve_reconstruct_bench
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
m=smsp__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum
m=$m,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
m=$m,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg
for k in 256 64; do
  timeout 120 ncu --clock-control none --metrics $m -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B --size 4096x4096 --rank $k > "$OUT/ncu-kernel-k$k.txt" 2>&1
  echo "=== kernel k=$k rc=$?"; grep -E 'smsp__|sm__|rror' "$OUT/ncu-kernel-k$k.txt" | head -8
done
OUT=$OUT bash docs/experiments/session-25/run-stalls.sh
