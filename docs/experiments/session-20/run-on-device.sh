#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick20.tar.xz"]), from
# the repository root:
#   held: the GPU reconstruction tests of held1 and held2, then main (the bundle's bench) against
#         held0, held1 and held2 (build-variants.sh) at k = 16, 64 and 256; --quick, 3 channels,
#         two rounds, main first in each.
#   storer: (BUNDLE=bundle/quick20b.tar.xz) patch 15, a store warp per consumer issues the copy
#         engine's row stores: its GPU kernel tests, racecheck and synccheck on the wgmma families
#         (device-check's filters), then main against it at the same rows as held.
#   hybrid: (BUNDLE=bundle/quick20c.tar.xz) patch 16, store warps from 8 k-steps a channel:
#         its GPU kernel tests, racecheck and synccheck on the wgmma families and the new mixed
#         test, then main, storer (patch 15) and hybrid from k = 16 to 256.
set -u
part=${1:?usage: run-on-device.sh held}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf "${MAIN:-bundle/svdserve.tar.xz}"
tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick20.tar.xz}"
R=/tmp/m/svdserve
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -e /tmp/q/svdserve/bin/bench_main ] || cp $R/bin/svdserve_reconstruct_bench /tmp/q/svdserve/bin/bench_main

compare() {  # size, rank, channels, then the variants; $runs rounds, each timed out at $limit s
  local size=$1 rank=$2 channels=$3
  shift 3
  for run in $(seq "${runs:-2}"); do
    for b in main "$@"; do
      timeout "${limit:-60}" /tmp/q/svdserve/bin/bench_$b --quick --size $size --rank $rank --channels $channels > /tmp/q.log 2>&1
      echo "$size k=$rank c=$channels $b rc=$?: $(grep -E '^[0-9]+x[0-9]+ ' /tmp/q.log | awk '{print "wg_ms="$11, "fl_wg="$19, "f16g_ms="$23, $26}')"
    done
  done
}

case "$part" in
  held)
    for v in held1 held2; do
      timeout 120 /tmp/q/svdserve/bin/tests_$v --gtest_brief=1 > $OUT/tests-$v.log 2>&1
      echo "tests_$v rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$v.log | tr '\n' ' ')"
    done
    for sr in 4096x4096:16 1024x1024:16 1920x1080:16 4096x4096:64 2048x2048:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 held0 held1 held2
    done
    ;;
  storer)
    T=/tmp/q/svdserve/bin/tests_storer
    timeout 120 $T --gtest_brief=1 > $OUT/tests-storer.log 2>&1
    echo "tests_storer rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-storer.log | tr '\n' ' ')"
    for sr in 4096x4096:16 1024x1024:16 1920x1080:16 4096x4096:64 2048x2048:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256 256x256:16; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 storer
    done
    for f in '*GpuReconstruct*odd_width_333x130_c3_rank_37*:GpuReconstructTest.BatchOfTasks*' 'GpuReconstructTest.BlocksThatLoop*'; do
      for tool in racecheck synccheck; do
        timeout 150 compute-sanitizer --tool $tool --kernel-name kns=svdserve --error-exitcode 9 $T --gtest_filter="$f" > /tmp/san.log 2>&1
        echo "$tool $f rc=$?: $(grep -E 'SUMMARY' /tmp/san.log | tail -1)"
        grep -E -A1 'Race reported between' /tmp/san.log | grep -oE '(bulk_load|zero_us_from|store_tiles|round_into_staging|bulk_store[a-z_]*|copy_out[a-z_]*)\(' | sort | uniq -c
        cat /tmp/san.log >> $OUT/sanitizer-storer.log
      done
    done
    ;;
  hybrid)
    T=/tmp/q/svdserve/bin/tests_hybrid
    timeout 150 $T --gtest_brief=1 > $OUT/tests-hybrid.log 2>&1
    echo "tests_hybrid rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-hybrid.log | tr '\n' ' ')"
    for sr in 4096x4096:16 4096x4096:64 4096x4096:96 4096x4096:128 4096x4096:192 4096x4096:256 1024x1024:64 1024x1024:128 1024x1024:256 1920x1080:128 1920x1080:256; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 storer hybrid
    done
    for f in '*GpuReconstruct*odd_width_333x130_c3_rank_37*:GpuReconstructTest.BatchOfTasks*' 'GpuReconstructTest.BlocksThatLoop*'; do
      for tool in racecheck synccheck; do
        timeout 200 compute-sanitizer --tool $tool --kernel-name kns=svdserve --error-exitcode 9 $T --gtest_filter="$f" > /tmp/san.log 2>&1
        echo "$tool $f rc=$?: $(grep -E 'SUMMARY' /tmp/san.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' /tmp/san.log | tr '\n' ' ')"
        grep -E -A1 'Race reported between' /tmp/san.log | grep -oE '(bulk_load|zero_us_from|store_tiles|round_into_staging|bulk_store[a-z_]*|copy_out[a-z_]*)\(' | sort | uniq -c
        cat /tmp/san.log >> $OUT/sanitizer-hybrid.log
      done
    done
    ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
