#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz"]), from the repository root:
# the wgmma kernel with one tensor store of pitched rows (session 22, 364e2b6) under Nsight Compute at 4096² and 1920x1080, k = 16
# (--quick, 3 channels):
# speed of light, pipe utilisation and warp states, then the stall samples per source line
# (tests/bench/ncu_source_stalls.py). One launch each (the third of the kernel's launches).
set -u
mkdir -p /tmp/m && tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
OUT=${OUT:-/tmp/out}
B=$R/bin/svdserve_reconstruct_bench
for sk in 4096x4096:16 1920x1080:16; do
  size=${sk%:*}; k=${sk#*:}
  echo "=== $size k=$k sections"
  timeout 150 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section MemoryWorkloadAnalysis \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg \
    -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B --quick --size $size --rank $k > $OUT/ncu-$size-k$k.txt 2>&1
  grep -E 'Duration|SM Frequency|DRAM Frequency|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Stall|Tensor|L1/TEX Cache|l1tex__|smsp__inst|sm__cycles' $OUT/ncu-$size-k$k.txt | head -30
  echo "=== $size k=$k stalls"
  timeout 200 ncu --clock-control none --section SourceCounters --import-source no \
    -k regex:fused_reconstruct_wgmma -s 2 -c 1 -o /tmp/wg-$size-k$k $B --quick --size $size --rank $k > /dev/null 2>&1
  ncu --import /tmp/wg-$size-k$k.ncu-rep --page source --csv --print-source sass > /tmp/wg-$size-k$k.csv 2>/dev/null
  python3 tests/bench/ncu_source_stalls.py /tmp/wg-$size-k$k.csv --top 12 > $OUT/stalls-$size-k$k.txt 2>&1
  head -40 $OUT/stalls-$size-k$k.txt
done
