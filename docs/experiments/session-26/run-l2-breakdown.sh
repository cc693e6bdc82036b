#!/usr/bin/env bash
# On the GPU host (device tool, carry as run-stores.sh), from the repository root (call 4): which
# of L2's units is busiest (ncu's breakdown of lts__throughput) under the tile stores alone, the
# data movement, and the kernel, 4096².
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
for b in quick26a quick26b; do tar -C /tmp/q -xJf bundle/$b.tar.xz; done
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
B=/tmp/q/svdserve/bin
m=gpu__time_duration.sum,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed
m=$m,breakdown:dram__throughput.avg.pct_of_peak_sustained_elapsed
for run in stores:16 stream:16 final:16 nostore:16 stores:64 stream:64 final:64 nostore:64; do
  b=${run%:*}; k=${run#*:}
  timeout 60 ncu --clock-control none --metrics $m -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B/bench_$b --size 4096x4096 --rank $k > /tmp/r/ncu-breakdown-$b-k$k.txt 2>&1
  echo "=== $b k=$k rc=$?"
  grep -E '^\s+(gpu__|dram__|lts__|fbpa__)' /tmp/r/ncu-breakdown-$b-k$k.txt | awk '{print $1, $NF}' |
    sort -k2 -g -r | head -8
done
tar -C /tmp/r -cJf "$OUT/call-4.tar.xz" .
