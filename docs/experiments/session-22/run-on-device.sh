#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick22*.tar.xz" named
# by BUNDLE]), from the repository root. bundle/svdserve.tar.xz gives the libraries and, unless
# the quick bundle has its own, the bench called "main": in calls 1-3 the bundle of ca070b8
# (d220595's kernel), in call 7 that of 364e2b6; call 5 and 8 take bench_main (d220595) from
# quick22c, and call 8 bench_new from the bundle of 3e00705 (NEW_FROM_BUNDLE=1).
#   variants: the GPU kernel tests of "both"; main, halves, skip, split and both at k = 16, 64
#             and 256 (--quick, 3 channels, $runs rounds, main first in each).
#   sass:     the SASS of the 3-channel kernel of main, halves and skip (cuobjdump), and ncu's
#             instruction counts and times of main and halves at 4096² and 1024², k = 16.
#   pitched:  (BUNDLE=bundle/quick22b.tar.xz) the GPU kernel tests of pitched; racecheck and
#             synccheck on the tensor-map tests; main, pitched and pitched_noskip at k = 16, 64
#             and 256 ($runs rounds, 3 by default); ncu's instruction counts of main and
#             pitched at 4096² and 1024², k = 16; the SASS of pitched's 3-channel kernel.
#   round2:   (BUNDLE=bundle/quick22d.tar.xz, build-variants-2.sh's) the GPU kernel tests of
#             both; main (the bundle of 364e2b6), none, acq, split and both at k = 16, 64, 256
#             ($runs rounds, 2).
#   tables:   (BUNDLE=bundle/quick22c.tar.xz, build-main-bench.sh's) the full kernel benchmark of
#             main before session 22 and of the new kernel, alternating, $runs rounds (2);
#             with NEW_FROM_BUNDLE=1 the new kernel's is bundle/svdserve.tar.xz's (call 8: the
#             final commit against d220595).
set -u
part=${1:?usage: run-on-device.sh variants}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf "${MAIN:-bundle/svdserve.tar.xz}"
tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick22.tar.xz}"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -e $B/bench_main ] || cp $R/bin/svdserve_reconstruct_bench $B/bench_main

compare() {  # size, rank, channels, then the variants; $runs rounds, each timed out at $limit s
  local size=$1 rank=$2 channels=$3
  shift 3
  for run in $(seq "${runs:-2}"); do
    for b in main "$@"; do
      timeout "${limit:-60}" $B/bench_$b --quick --size $size --rank $rank --channels $channels > /tmp/q.log 2>&1
      echo "$size k=$rank c=$channels $b rc=$?: $(grep -E '^[0-9]+x[0-9]+ ' /tmp/q.log | awk '{print "wg_ms="$11, "fl_wg="$19, "f16g_ms="$23, $26}')"
    done
  done
}

case "$part" in
  variants)
    start=$SECONDS
    timeout 200 $B/tests_both --gtest_brief=1 > $OUT/tests-both.log 2>&1
    echo "tests_both rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-both.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-both.log | head -5
    echo "tests took $((SECONDS - start)) s"
    for sr in ${ROWS:-1920x1080:16 4096x4096:16 1024x1024:16 2048x2048:16 1920x1080:64 4096x4096:64 1024x1024:64 1920x1080:256 4096x4096:256}; do
      runs=${runs:-2} limit=25 compare ${sr%:*} ${sr#*:} 3 ${VARIANTS:-halves skip split both}
      echo "after $sr: $((SECONDS - start)) s"
    done
    ;;
  sass)
    for b in main halves skip; do
      cuobjdump -sass $B/bench_$b 2>/dev/null |
        awk '/Function : .*fused_reconstruct_wgmma_kernelILj3ELb0/{on=1} on&&/Function : /&&!/ILj3ELb0/{on=0} on' > $OUT/sass-$b.txt
      echo "sass $b: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/sass-$b.txt) instructions"
    done
    for size in 4096x4096 1024x1024; do
      for b in main halves; do
        timeout 100 ncu --clock-control none \
          --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum \
          -k regex:fused_reconstruct_wgmma -s 2 -c 1 $B/bench_$b --quick --size $size --rank 16 > $OUT/ncu-$b-$size.txt 2>&1
        echo "$b $size: $(grep -E 'smsp__inst_executed.sum|sm__cycles_elapsed.avg|gpu__time_duration.sum|issue_active|wavefronts' $OUT/ncu-$b-$size.txt | awk '{print $1"="$NF}' | tr '\n' ' ')"
      done
    done
    ;;
  round2)
    start=$SECONDS
    timeout 200 $B/tests_both --gtest_brief=1 > $OUT/tests-both.log 2>&1
    echo "tests_both rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-both.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-both.log | head -5
    for sr in ${ROWS:-4096x4096:16 1920x1080:16 1024x1024:16 2048x2048:16 4096x4096:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256}; do
      runs=${runs:-2} limit=25 compare ${sr%:*} ${sr#*:} 3 none acq split both
    done
    echo "all took $((SECONDS - start)) s"
    ;;
  tables)
    [ "${NEW_FROM_BUNDLE:-0}" = 1 ] && cp $R/bin/svdserve_reconstruct_bench $B/bench_new
    for run in $(seq "${runs:-2}"); do
      for b in main new; do
        timeout 120 $B/bench_$b > $OUT/table-$b-$run.txt 2>&1
        echo "$b round $run rc=$?: $(grep -E 'random operands|loop alone' $OUT/table-$b-$run.txt | grep -oE 'SM clock [0-9.]+ GHz' | tr '\n' ' ')"
        grep -E '^[0-9]+x[0-9]+ ' $OUT/table-$b-$run.txt | awk '{printf "%s k=%s %s=%s %s ", $1, $4, $13, $14, $11} END {print ""}'
      done
    done
    ;;
  pitched)
    start=$SECONDS
    timeout 200 $B/tests_pitched --gtest_brief=1 > $OUT/tests-pitched.log 2>&1
    echo "tests_pitched rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-pitched.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-pitched.log | head -5
    f='GpuReconstructTest.BlocksThatLoopOverTilesStoredByTensorMaps*:GpuReconstructTest.TensorMapAndThreadStores*:GpuReconstructShapeTest.BothPathsMatchFloat64/bottom_half*'
    for tool in racecheck synccheck; do
      timeout 150 compute-sanitizer --tool $tool --kernel-name kns=svdserve --error-exitcode 9 $B/tests_pitched --gtest_filter="$f" > /tmp/san.log 2>&1
      echo "$tool rc=$?: $(grep -E 'SUMMARY' /tmp/san.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' /tmp/san.log | tr '\n' ' ')"
      grep -E -A1 'Race reported between' /tmp/san.log | grep -oE '(bulk_load|zero_us_from|round_into_[a-z]*|tensor_store[a-z_]*|bulk_store[a-z_]*|copy_out[a-z_]*)\(' | sort | uniq -c
      cat /tmp/san.log >> $OUT/sanitizer-pitched.log
    done
    echo "tests and sanitizers took $((SECONDS - start)) s"
    for sr in ${ROWS:-4096x4096:16 1024x1024:16 2048x2048:16 1920x1080:16 256x256:16 4096x4096:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256 1920x1080:256}; do
      runs=${runs:-3} limit=25 compare ${sr%:*} ${sr#*:} 3 pitched pitched_noskip
    done
    echo "timings took $((SECONDS - start)) s"
    for size in 4096x4096 1024x1024; do
      for b in main pitched; do
        timeout 100 ncu --clock-control none \
          --metrics smsp__inst_executed.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum \
          -k regex:fused_reconstruct_wgmma -s 2 -c 1 $B/bench_$b --quick --size $size --rank 16 > $OUT/ncu-$b-$size.txt 2>&1
        echo "$b $size: $(grep -E 'smsp__inst_executed.sum|sm__cycles_elapsed.avg|gpu__time_duration.sum|issue_active|wavefronts|conflicts' $OUT/ncu-$b-$size.txt | awk '{print $1"="$NF}' | tr '\n' ' ')"
      done
    done
    cuobjdump -sass $B/bench_pitched 2>/dev/null |
      awk '/Function : .*fused_reconstruct_wgmma_kernelILj3ELb0/{on=1} on&&/Function : /&&!/ILj3ELb0/{on=0} on' > $OUT/sass-pitched.txt
    echo "sass pitched: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/sass-pitched.txt) instructions"
    echo "all took $((SECONDS - start)) s"
    ;;
esac
