#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root:
# the rows near 80 % under Nsight Compute, against rows of the same kernel that are not.
#   rows at k = 1: 256² and 1920×1080 (near 80 %) against 4096² (88 %);
#   wgmma at k = 16: 1920×1080 (77–80 %) against 2048² (81 %).
# Full batches (not --quick), one launch each (the third), 3 channels; then the stall samples
# per source line of rows at 256² and 4096² (tests/bench/ncu_source_stalls.py).
set -u
mkdir -p /tmp/m && tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B=$R/bin/svdserve_reconstruct_bench
sections="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section SchedulerStats"
profile() {  # kernel regex, size, rank
  local name=$1 size=$2 k=$3
  timeout 120 ncu --clock-control none $sections -k regex:$name -s 2 -c 1 \
    $B --size $size --rank $k > $OUT/ncu-$name-$size-k$k.txt 2>&1
  echo "=== $name $size k=$k rc=$?"
  grep -E 'Duration|SM Frequency|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|Issued Warp|Eligible Warps|Active Warps Per|Achieved Occupancy|Warp Cycles Per Issued|Grid Size|Registers Per|No Eligible' $OUT/ncu-$name-$size-k$k.txt | head -20
}
stalls() {  # kernel regex, size, rank
  local name=$1 size=$2 k=$3
  timeout 150 ncu --clock-control none --section SourceCounters --import-source no -k regex:$name -s 2 -c 1 \
    -o /tmp/st-$size-k$k $B --size $size --rank $k > /dev/null 2>&1
  ncu --import /tmp/st-$size-k$k.ncu-rep --page source --csv --print-source sass > /tmp/st-$size-k$k.csv 2>/dev/null
  python3 tests/bench/ncu_source_stalls.py /tmp/st-$size-k$k.csv --top 14 > $OUT/stalls-$name-$size-k$k.txt 2>&1
  echo "=== stalls $name $size k=$k"; head -30 $OUT/stalls-$name-$size-k$k.txt
}
start=$SECONDS
profile fused_reconstruct_rows 256x256 1
profile fused_reconstruct_rows 1920x1080 1
profile fused_reconstruct_rows 4096x4096 1
profile fused_reconstruct_wgmma 1920x1080 16
profile fused_reconstruct_wgmma 2048x2048 16
echo "profiles took $((SECONDS - start)) s"
stalls fused_reconstruct_rows 256x256 1
stalls fused_reconstruct_rows 4096x4096 1
echo "all took $((SECONDS - start)) s"
