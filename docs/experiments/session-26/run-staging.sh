#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/quick26a.tar.xz",
# "bundle/quick26d.tar.xz"]), from the repository root (call 6): does a consumer's wait for its
# previous tile's store (before rounding the next tile into the same staging) cost time at
# k = 16? bench_nowait (no-staging-wait.patch, timing only: outputs may be wrong) against main
# (bench_final), full tables in the order final, nowait, nowait, final; then main's stall samples
# per SASS line at 4096², k = 16 (as session 25's run-stalls.sh).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
for b in quick26a quick26d; do tar -C /tmp/q -xJf bundle/$b.tar.xz; done
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
B=/tmp/q/svdserve/bin
i=0
for b in final nowait nowait final; do
  i=$((i + 1))
  timeout 120 $B/bench_$b > /tmp/r/table-$i-$b.txt 2>&1
  echo "$i $b rc=$?"
  grep -E '^[0-9]+x[0-9]+ ' /tmp/r/table-$i-$b.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $19} END {print ""}'
done
k=16
timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats \
  --import-source no -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
  -o /tmp/st-k$k $B/bench_final --size 4096x4096 --rank $k > /tmp/r/stalls-ncu-k$k.log 2>&1
ncu --import /tmp/st-k$k.ncu-rep --page source --csv --print-source sass > /tmp/st-k$k.csv 2>/dev/null
python3 tests/bench/ncu_source_stalls.py /tmp/st-k$k.csv --top 25 > /tmp/r/stalls-k$k.txt 2>&1
xz -6 -c /tmp/st-k$k.csv > /tmp/r/stalls-k$k.csv.xz
echo "=== stalls k=$k"; head -45 /tmp/r/stalls-k$k.txt
tar -C /tmp/r -cJf "$OUT/call-6.tar.xz" .
