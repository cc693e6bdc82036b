#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/quick26a.tar.xz",
# "bundle/quick26b.tar.xz"]), from the repository root (call 2): the data movement's parts alone.
#  1. full kernel benchmark tables of bench_stream (no wgmmas, no rounding: loads and stores),
#     bench_stores (the same without the operand loads) and bench_nostore (without the tile
#     stores), alternating, two rounds;
#  2. ncu's memory counters of bench_stores at 4096², k = 16, 64 and 256;
#  3. whether the parts follow the SM clock: ncu at the base clock (--clock-control base) against
#     the clock the chip picks (none), 4096², k = 64, for final, stream, stores and nostore.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
for b in quick26a quick26b; do tar -C /tmp/q -xJf bundle/$b.tar.xz; done
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
B=/tmp/q/svdserve/bin
for run in 1 2; do
  for b in stream stores nostore; do
    timeout 120 $B/bench_$b > /tmp/r/table-$b-$run.txt 2>&1
    echo "$b round $run rc=$?"
    grep -E '^[0-9]+x[0-9]+ ' /tmp/r/table-$b-$run.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $19} END {print ""}'
  done
done
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
m=$m,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_ltcfabric.sum
m=$m,lts__throughput.avg.pct_of_peak_sustained_elapsed
m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second
for k in 16 64 256; do
  timeout 60 ncu --clock-control none --metrics $m -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B/bench_stores --size 4096x4096 --rank $k > /tmp/r/ncu-stores-k$k.txt 2>&1
  echo "=== ncu stores k=$k rc=$?"
  grep -E '^\s+(gpu__|dram__|lts__|sm__)' /tmp/r/ncu-stores-k$k.txt | awk '{print $1, $(NF-1), $NF}'
done
m=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__cycles_elapsed.avg.per_second
for b in final stream stores nostore; do
  for c in base none; do
    timeout 60 ncu --clock-control $c --metrics $m -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
      $B/bench_$b --size 4096x4096 --rank 64 > /tmp/r/ncu-clock-$b-$c.txt 2>&1
    echo "=== clock $c $b k=64: $(grep -E '^\s+(gpu__|sm__|lts__)' /tmp/r/ncu-clock-$b-$c.txt | awk '{printf "%s %s %s; ", $1, $(NF-1), $NF}')"
  done
done
tar -C /tmp/r -cJf "$OUT/call-2.tar.xz" .
