#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/smem_traffic"]), from the
# repository root (call 3): smem_traffic's rounding variants, then instructions issued per wgmma
# instruction (ncu) in the loop alone (smem_traffic "one": pair, bytes, E = 16 and 4) and in the
# kernel (4096², k = 256 and 64), and the kernel's SASS.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m && tar -C /tmp/m -xJf bundle/svdserve.tar.xz
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib
start=$SECONDS
./bundle/smem_traffic 20000 round | tee "$OUT/round.txt"
B=$R/bin/svdserve_reconstruct_bench
m=smsp__inst_executed.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg,smsp__inst_executed_op_shared_st.sum,smsp__thread_inst_executed_per_inst_executed.ratio
show() { grep -E 'smsp__|sm__|rror' "$1" | head -12; }
for skip in 1 7; do
  timeout 120 ncu --clock-control none --metrics $m -k regex:traffic_kernel -s $skip -c 1 \
    ./bundle/smem_traffic 20000 one > "$OUT/ncu-loop-s$skip.txt" 2>&1
  echo "=== loop launch $skip rc=$?"; show "$OUT/ncu-loop-s$skip.txt"
done
for k in 256 64; do
  timeout 120 ncu --clock-control none --metrics $m -k regex:fused_reconstruct_wgmma -s 2 -c 1 \
    $B --size 4096x4096 --rank $k > "$OUT/ncu-kernel-k$k.txt" 2>&1
  echo "=== kernel k=$k rc=$?"; show "$OUT/ncu-kernel-k$k.txt"
done
cuobjdump -sass $B 2>/dev/null | awk '/Function : .*fused_reconstruct_wgmma/{p=1} /Function : /&&!/fused_reconstruct_wgmma/{p=0} p' | xz -6 > "$OUT/wgmma-sass.txt.xz"
ls -la "$OUT"
echo "all took $((SECONDS - start)) s"
