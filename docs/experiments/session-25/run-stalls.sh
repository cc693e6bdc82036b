#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root: the
# wgmma kernel's stall samples per SASS instruction (ncu SourceCounters) at 4096², k = 256 and
# k = 64: where its warps wait (a stage's full barrier, their own wgmmas, the staging's barrier).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
B=$R/bin/svdserve_reconstruct_bench
for k in 256 64; do
  timeout 150 ncu --clock-control none --section SourceCounters --section WarpStateStats \
    --import-source no -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    -o /tmp/st-k$k $B --size 4096x4096 --rank $k > "$OUT/stalls-ncu-k$k.log" 2>&1
  ncu --import /tmp/st-k$k.ncu-rep --page source --csv --print-source sass > /tmp/st-k$k.csv 2>/dev/null
  python3 tests/bench/ncu_source_stalls.py /tmp/st-k$k.csv --top 25 > "$OUT/stalls-k$k.txt" 2>&1
  xz -6 -c /tmp/st-k$k.csv > "$OUT/stalls-k$k.csv.xz"
  echo "=== stalls k=$k"; head -45 "$OUT/stalls-k$k.txt"
done
