#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root:
# main's wgmma kernel under Nsight Compute at 4096², k = 16, 64, 256 (--quick, 3 channels):
# speed of light, pipe utilisation and warp states, then the stall samples per source line
# (tests/bench/ncu_source_stalls.py). One launch each (the third of the kernel's launches).
set -u
mkdir -p /tmp/m && tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
OUT=${OUT:-/tmp/out}
B=$R/bin/svdserve_reconstruct_bench
for k in 16 64 256; do
  echo "=== k=$k sections"
  timeout 150 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section MemoryWorkloadAnalysis -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B --quick --size 4096x4096 --rank $k > $OUT/ncu-k$k.txt 2>&1
  grep -E 'Duration|SM Frequency|DRAM Frequency|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Stall|Tensor' $OUT/ncu-k$k.txt | head -24
  echo "=== k=$k stalls"
  timeout 200 ncu --clock-control none --section SourceCounters --import-source no \
    -k regex:fused_reconstruct_wgmma -s 2 -c 1 -o /tmp/wg-k$k $B --quick --size 4096x4096 --rank $k > /dev/null 2>&1
  ncu --import /tmp/wg-k$k.ncu-rep --page source --csv --print-source sass > /tmp/wg-k$k.csv 2>/dev/null
  python3 tests/bench/ncu_source_stalls.py /tmp/wg-k$k.csv --top 12 > $OUT/stalls-k$k.txt 2>&1
  head -40 $OUT/stalls-k$k.txt
done
