#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/quick.tar.xz",
# "docs/experiments/session-16/run-on-device.sh"]), one part a call (each under 10 minutes):
#   table:   the variants' GPU reconstruction tests, a racecheck of the combined one, then main's
#            full benchmark table with the cuBLAS FP16 GEMM reference;
#   compare: main against defer, arrive and both, alternating, --quick, two runs each: 3
#            channels (3 stages) at 1024² and 4096², k = 256 and 64; 1, 2 and 4 channels (5, 4,
#            2 stages) at 1024², k = 256;
#   copyout: main against warpout and warploop the same way: k = 16 at 256², 1024², 4096² and
#            1920×1080, k = 64 and 256 at 1024².
set -u
part=${1:?usage: run-on-device.sh table|compare|copyout}
mkdir -p /tmp/q && tar -C /tmp/q -xJf bundle/quick.tar.xz
R=/tmp/q/svdserve
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

compare() {  # size, rank, channels, then the variants
  local size=$1 rank=$2 channels=$3
  shift 3
  for run in 1 2; do
    for b in main "$@"; do
      timeout 60 $R/bin/bench_$b --quick --size $size --rank $rank --channels $channels > /tmp/q.log 2>&1
      echo "$size k=$rank c=$channels $b rc=$?: $(grep -E '^[0-9]+x[0-9]+ ' /tmp/q.log | awk '{print "wg_ms="$11, "fl_wg="$19, $26}')"
    done
  done
}

case "$part" in
  table)
    for v in defer arrive both warpout warploop; do
      timeout 120 $R/bin/tests_$v --gtest_brief=1 --gtest_filter='*Reconstruct*' > $OUT/tests-$v.log 2>&1
      echo "tests_$v rc=$?: $(grep -E '^\[  (PASSED|FAILED)' $OUT/tests-$v.log | tr '\n' ' ')"
    done
    timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=svdserve --error-exitcode 9 \
      $R/bin/tests_both --gtest_filter='GpuReconstructTest.BlocksThatLoop*:*GpuReconstruct*odd_width_333x130_c3_rank_37*' \
      > $OUT/racecheck.log 2>&1
    echo "racecheck both rc=$?: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.log | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=svdserve --error-exitcode 9 \
      $R/bin/tests_warploop --gtest_filter='GpuReconstructTest.BlocksThatLoop*:*GpuReconstruct*square_256x256_c3_rank_5*' \
      > $OUT/racecheck-warploop.log 2>&1
    echo "racecheck warploop rc=$?: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-warploop.log | tail -1)"
    timeout 300 $R/bin/bench_main --json $OUT/bench-main.json > $OUT/bench-main.log 2>&1
    echo "bench_main full rc=$?"
    grep -vE '^(shape|$)' $OUT/bench-main.log | grep -vE '^[0-9]+x[0-9]+ '
    grep -E '^[0-9]+x[0-9]+ ' $OUT/bench-main.log | awk '{print $1, "k="$4, "floor="$5, $6, "wg_ms="$11, "auto%="$14, "fl_wg="$19, "f16g_ms="$23, "%mma_f16g="$24, "x_f16g="$25, $26}'
    ;;
  compare)
    for size in 1024x1024 4096x4096; do
      for rank in 256 64; do compare $size $rank 3 defer arrive both; done
    done
    for channels in 1 2 4; do compare 1024x1024 256 $channels defer arrive both; done
    ;;
  copyout)
    for size in 256x256 1024x1024 4096x4096 1920x1080; do compare $size 16 3 warpout warploop; done
    for rank in 64 256; do compare 1024x1024 $rank 3 warpout warploop; done
    ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
