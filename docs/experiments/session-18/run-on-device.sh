#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/quick.tar.xz",
# "docs/experiments/session-18/run-on-device.sh"]), one part a call (each under 10 minutes):
#   check:   the warp-specialised kernel's GPU reconstruction tests (ws), memcheck and racecheck
#            on a few of them, then main against ws, alternating, --quick, two runs each, at every
#            size of the table for k = 16, 64, 256;
#   next:    (for session 19) the GPU reconstruction tests of coopil, coop2g and coopil2g, then
#            main, coop, coopil, coop2g and coopil2g alternating, --quick, k = 256, 64 and 16 at
#            1024², 2048², 4096² and 1920×1080 (about 2 minutes).
set -u
part=${1:?usage: run-on-device.sh check|next}
mkdir -p /tmp/q && tar -C /tmp/q -xJf bundle/quick.tar.xz
R=/tmp/q/svdserve
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

compare() {  # size, rank, channels, then the variants; $runs rounds, each timed out at $limit s
  local size=$1 rank=$2 channels=$3
  shift 3
  for run in $(seq "${runs:-2}"); do
    for b in main "$@"; do
      timeout "${limit:-60}" $R/bin/bench_$b --quick --size $size --rank $rank --channels $channels > /tmp/q.log 2>&1
      echo "$size k=$rank c=$channels $b rc=$?: $(grep -E '^[0-9]+x[0-9]+ ' /tmp/q.log | awk '{print "wg_ms="$11, "fl_wg="$19, "f16g_ms="$23, $26}')"
    done
  done
}

case "$part" in
  check)
    timeout 120 $R/bin/tests_ws --gtest_brief=1 --gtest_filter='*Reconstruct*' > $OUT/tests-ws.log 2>&1
    echo "tests_ws rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-ws.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-ws.log | head -20
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 \
      $R/bin/tests_ws --gtest_filter='GpuReconstructTest.BlocksThatLoop*:*GpuReconstruct*odd_width_333x130_c3_rank_37*:*GpuReconstruct*square_256x256_c3_rank_5*' \
      > $OUT/memcheck.log 2>&1
    echo "memcheck ws rc=$?: $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1)"
    timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=svdserve --error-exitcode 9 \
      $R/bin/tests_ws --gtest_filter='GpuReconstructTest.BlocksThatLoop*:*GpuReconstruct*odd_width_333x130_c3_rank_37*' \
      > $OUT/racecheck.log 2>&1
    echo "racecheck ws rc=$?: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.log | tail -1)"
    for size in 256x256 1024x1024 2048x2048 4096x4096 1920x1080; do
      for rank in 16 64 256; do compare $size $rank 3 ws; done
    done
    ;;
  next)
    for v in coopil coop2g coopil2g; do
      timeout 60 $R/bin/tests_$v --gtest_brief=1 --gtest_filter='*Reconstruct*' > $OUT/tests-$v.log 2>&1
      echo "tests_$v rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$v.log | tr '\n' ' ')"
    done
    for size in 4096x4096 2048x2048 1024x1024 1920x1080; do
      for rank in 256 64 16; do runs=1 limit=25 compare $size $rank 3 coop coopil coop2g coopil2g; done
    done
    ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
