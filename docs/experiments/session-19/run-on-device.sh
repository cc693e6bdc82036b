#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/quick19.tar.xz"]), from the repository root:
#   split:   where coop's time goes at k = 256 (and 64, 16): coop, and its timing-only variants
#            without the rounding (coopnoround), without the operand stream (coopnostream), and
#            with neither (coopmma: the consumers' MMAs and waits alone); and the staggered
#            consumers (coopstag2, coopstag4), after coopstag4's GPU reconstruction tests.
#            main first in each round; two rounds.
#   zeroing: (bundle/zeroing19.tar.xz) the landed kernel's three ways to zero US past the rank:
#            zs (in the stage, by the consumers, as session 18), rs1 and rs2 (in registers, US
#            from registers on that step: one group, or two groups); their GPU reconstruction
#            tests, memcheck and racecheck, and the times against session 18's main at k = 256,
#            64, 16 and at ranks 20 and 72 (which take the step past the rank).
#   split2:  the same after patch 13 (coopnoround and coopmma keep their wgmmas), and coopstag2
#            at every size at k = 16.
set -u
part=${1:?usage: run-on-device.sh split|split2|zeroing}
mkdir -p /tmp/q && tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick19.tar.xz}"
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
  split)
    timeout 90 $R/bin/tests_coopstag4 --gtest_brief=1 --gtest_filter='*Reconstruct*' > $OUT/tests-coopstag4.log 2>&1
    echo "tests_coopstag4 rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-coopstag4.log | tr '\n' ' ')"
    for sr in 4096x4096:256 2048x2048:256 1024x1024:256 1920x1080:256 4096x4096:64 1024x1024:64 4096x4096:16; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 coop coopnoround coopnostream coopmma coopstag2 coopstag4
    done
    ;;
  split2)
    for sr in 4096x4096:256 1024x1024:256 4096x4096:64 4096x4096:16 1024x1024:16; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 coop coopnoround coopnostream coopmma coopstag2
    done
    for sr in 256x256:16 2048x2048:16 1920x1080:16 256x256:64 2048x2048:64 1920x1080:64 256x256:256; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 coop coopstag2
    done
    ;;
  zeroing)
    for v in zs rs1 rs2; do
      timeout 60 $R/bin/tests_$v --gtest_brief=1 --gtest_filter='*Reconstruct*' > $OUT/tests-$v.log 2>&1
      echo "tests_$v rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$v.log | tr '\n' ' ')"
      timeout 100 compute-sanitizer --tool racecheck --kernel-name kns=svdserve --error-exitcode 9 \
        $R/bin/tests_$v --gtest_filter='GpuReconstructTest.BlocksThatLoop*:*GpuReconstruct*odd_width_333x130_c3_rank_37*' > $OUT/racecheck-$v.log 2>&1
      echo "racecheck $v rc=$?: $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck-$v.log | tail -1)"
    done
    for sr in 4096x4096:256 1024x1024:256 4096x4096:64 4096x4096:16 1024x1024:16 2048x2048:20 2048x2048:72; do
      runs=1 limit=25 compare ${sr%:*} ${sr#*:} 3 zs rs1 rs2
    done
    ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
