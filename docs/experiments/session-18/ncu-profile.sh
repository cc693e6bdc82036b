#!/usr/bin/env bash
# On the GPU host (carry bundle/quick.tar.xz): ncu metrics of the wgmma kernel, one launch after
# two warm-ups, for each "binary size rank" argument (binary: bench_<name> of the bundle).
# Usage: ncu-profile.sh "ws 4096x4096 256" "main 4096x4096 16" ...
set -u
mkdir -p /tmp/q && tar -C /tmp/q -xJf bundle/quick.tar.xz
R=/tmp/q/svdserve
export LD_LIBRARY_PATH=$R/lib
stalls=""
for s in barrier long_scoreboard wait math_pipe_throttle membar sleeping short_scoreboard \
         mio_throttle misc dispatch_stall selected not_selected no_instruction lg_throttle \
         branch_resolving; do
  stalls+=",smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
M+=",sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
M+=",sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
M+=",sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
M+=",sm__inst_executed_pipe_tensor_op_gmma.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed"
M+=",lts__t_bytes.sum.per_second,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
M+=",dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_write.sum.per_second"
M+=",l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed.sum$stalls"
ncu --query-metrics 2>/dev/null | grep -iE "pipe_tensor|gmma" | awk '{print $1}' | tr '\n' ' '; echo
for cfg in "$@"; do
  set -- $cfg
  echo "== $1 $2 k=$3"
  timeout 100 ncu --clock-control none --launch-skip 2 --launch-count 1 \
    --kernel-name regex:fused_reconstruct_wgmma --metrics "$M" --csv --page raw \
    $R/bin/bench_$1 --quick --size $2 --rank $3 --channels 3 2>/dev/null | python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if len(r) > 10]
if len(rows) < 3:
    sys.exit(print("no data"))
wanted = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "tensor", "lts__",
          "wavefronts_mem_shared.sum",
          "dram__throughput.avg", "dram__bytes_write.sum", "op_st.sum", "inst_executed.sum",
          "stalled_")
out = []
for name, value in zip(rows[0], rows[2]):
    if any(w in name for w in wanted):
        name = name.replace("smsp__average_warps_issue_stalled_", "")
        out.append(name.replace("_per_issue_active.ratio", "") + "=" + value.replace(",", ""))
print(" ".join(out))
'
done
