#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/$BUNDLE"]), from the
# repository root: where the wgmma kernel's operand loads and tile stores meet (L2 or DRAM).
#  1. each variant's GPU kernel tests (tests_NAME in $BUNDLE, $TESTS);
#  2. the full kernel benchmark of $BASE and the variants ($NAMES), alternating, $tables rounds;
#  3. ncu's memory counters (DRAM bytes, L2 hit rate and traffic, per source) at 4096², k = 64
#     and 256, for each of $NCU.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
tar -C /tmp/q -xJf "bundle/$BUNDLE"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
for name in ${TESTS:-}; do
  timeout 200 $B/tests_$name --gtest_brief=1 > /tmp/r/tests-$name.log 2>&1
  echo "tests_$name rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' /tmp/r/tests-$name.log | tr '\n' ' ')"
done
for run in $(seq "${tables:-2}"); do
  for b in $BASE $NAMES; do
    timeout 120 $B/bench_$b > /tmp/r/table-$b-$run.txt 2>&1
    echo "$b round $run rc=$?: $(grep -E '^correctness' /tmp/r/table-$b-$run.txt)"
    grep -E '^[0-9]+x[0-9]+ ' /tmp/r/table-$b-$run.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $19} END {print ""}'
  done
done
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
m=$m,lts__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum
m=$m,lts__t_sectors_op_read_lookup_hit.sum,lts__t_sectors_op_read_lookup_miss.sum
m=$m,lts__t_sectors_srcunit_ltcfabric.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed
m=$m,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second
for b in ${NCU:-}; do
  for k in 64 256; do
    timeout 100 ncu --clock-control none --metrics $m \
      -k regex:fused_reconstruct_wgmma -s 2 -c 1 $B/bench_$b --size 4096x4096 --rank $k \
      > "/tmp/r/ncu-$b-k$k.txt" 2>&1
    echo "=== ncu $b k=$k rc=$?"
    grep -E '^\s+(gpu__|dram__|lts__|sm__)' "/tmp/r/ncu-$b-k$k.txt" | awk '{print $1, $(NF-1), $NF}'
  done
done
# One file back: the device tool returns at most 8 (call 1 ran an earlier form of this script,
# whose tables did not come back; its console is results/call-1-l2/console.txt).
tar -C /tmp/r -cJf "$OUT/call-1.tar.xz" .
