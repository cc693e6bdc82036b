#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/smem_traffic"]), from the
# repository root (call 1): smem_traffic's patterns, then the wgmma kernel under Nsight Compute at
# k = 256 and k = 64 (4096²), with the shared-memory bank and tensor-pipe counters.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m && tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
start=$SECONDS
./bundle/smem_traffic 20000 | tee "$OUT/traffic.txt"
echo "traffic took $((SECONDS - start)) s"
ncu --query-metrics 2>/dev/null | grep -Ei 'bank|gmma|shared|tensor' > "$OUT/metrics.txt"
wc -l "$OUT/metrics.txt"
B=$R/bin/svdserve_reconstruct_bench
metrics=l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum
for k in 256 64; do
  timeout 120 ncu --clock-control none --metrics $metrics -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B --size 4096x4096 --rank $k > "$OUT/ncu-k$k.txt" 2>&1
  echo "=== k=$k rc=$?"; grep -E 'l1tex|sm__|gpu__|ERR|rror' "$OUT/ncu-k$k.txt" | head -12
  timeout 120 ncu --clock-control none --section MemoryWorkloadAnalysis_Tables --section SpeedOfLight \
    -k regex:fused_reconstruct_wgmma -s 2 -c 1 $B --size 4096x4096 --rank $k > "$OUT/ncu-mwa-k$k.txt" 2>&1
  echo "=== mwa k=$k rc=$?"; grep -Ei 'shared|bank|Throughput|Duration' "$OUT/ncu-mwa-k$k.txt" | head -24
done
echo "all took $((SECONDS - start)) s"
