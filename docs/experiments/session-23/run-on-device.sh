#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick23.tar.xz"]), from
# the repository root. bundle/svdserve.tar.xz is the bundle of the working tree (side-by-side
# pairs) and gives the libraries and bench_new; quick23 holds bench_main, the benchmark of main
# before session 23 (6f9ba54), built by build-main-bench.sh.
#   side:   the GPU kernel tests of the new bundle; racecheck on the tests of side-by-side pairs;
#           main and new at the rows the change touches and some it should not ($runs rounds,
#           --quick, 3 channels, main first in each); then the full kernel benchmark of both,
#           alternating, $tables rounds (2).
#   tables: only the full benchmarks of "side", alternating.
#   ab:     main and new (or $VARIANTS: benches of quick23b, bench_NAME) alternating on single
#           rows of the full benchmark (full batches, not --quick), $runs rounds (4); and the SASS
#           of their 3-channel kernels (cuobjdump); with $TESTS (a test binary of the quick
#           bundle) first the GPU kernel tests of it.
set -u
part=${1:?usage: run-on-device.sh side}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf "${MAIN:-bundle/svdserve.tar.xz}"
tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick23.tar.xz}"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
cp $R/bin/svdserve_reconstruct_bench $B/bench_new
tests=$R/bin/svdserve_gpu_kernel_tests

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

full_tables() {  # the full kernel benchmark of main and new, alternating, $tables rounds (2)
  for run in $(seq "${tables:-2}"); do
    for b in main new; do
      timeout 120 $B/bench_$b > $OUT/table-$b-$run.txt 2>&1
      echo "$b round $run rc=$?: $(grep -E 'random operands|loop alone' $OUT/table-$b-$run.txt | grep -oE 'SM clock [0-9.]+ GHz' | tr '\n' ' ')"
      grep -E '^[0-9]+x[0-9]+ ' $OUT/table-$b-$run.txt | awk '{printf "%s k=%s %s=%s %s ", $1, $4, $13, $14, $11} END {print ""}'
    done
  done
}

case "$part" in
  side)
    start=$SECONDS
    timeout 200 $tests --gtest_brief=1 > $OUT/tests-new.log 2>&1
    echo "kernel tests rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-new.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-new.log | head -5
    f='GpuReconstructTest.BlocksThatLoopOverStackedAndSideBySidePairs:Shapes/GpuReconstructShapeTest.BothPathsMatchFloat64/side_by_side*'
    timeout 150 compute-sanitizer --tool racecheck --kernel-name kns=svdserve --error-exitcode 9 $tests --gtest_filter="$f" > /tmp/san.log 2>&1
    echo "racecheck rc=$?: $(grep -E 'SUMMARY' /tmp/san.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' /tmp/san.log | tr '\n' ' ')"
    grep -E -A1 'Race reported between' /tmp/san.log | grep -oE '(bulk_load|zero_k_from|round_into_[a-z]*|tensor_store[a-z_]*|bulk_store[a-z_]*|copy_out[a-z_]*)\(' | sort | uniq -c
    xz -c /tmp/san.log > $OUT/racecheck-side.log.xz
    echo "tests and racecheck took $((SECONDS - start)) s"
    for sr in ${ROWS:-1920x1080:16 1920x1080:64 1920x1080:256 4096x4096:16 1024x1024:64}; do
      runs=${runs:-3} limit=25 compare ${sr%:*} ${sr#*:} 3 new
    done
    echo "timings took $((SECONDS - start)) s"
    full_tables
    echo "all took $((SECONDS - start)) s"
    ;;
  tables)
    full_tables
    ;;
  ab)
    start=$SECONDS
    if [ -n "${TESTS:-}" ]; then
      timeout 200 $B/$TESTS --gtest_brief=1 > $OUT/tests-$TESTS.log 2>&1
      echo "$TESTS rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$TESTS.log | tr '\n' ' ')"
      grep -E '^\[  FAILED' $OUT/tests-$TESTS.log | head -5
    fi
    for sr in ${ROWS:-1024x1024:256 4096x4096:256 1920x1080:256 1920x1080:16 1024x1024:64}; do
      for run in $(seq "${runs:-4}"); do
        for b in ${VARIANTS:-main new}; do
          timeout 60 $B/bench_$b --size ${sr%:*} --rank ${sr#*:} > /tmp/ab.log 2>&1
          echo "${sr%:*} k=${sr#*:} $b rc=$?: $(grep -oE 'random operands: +[0-9.]+ TFLOP/s, SM clock [0-9.]+' /tmp/ab.log | grep -oE '[0-9.]+$') GHz $(grep -E '^[0-9]+x[0-9]+ ' /tmp/ab.log | awk '{print "wg_ms="$11, "fl_wg="$19, $NF}')"
        done
      done
      echo "after $sr: $((SECONDS - start)) s"
    done
    for b in ${VARIANTS:-main new}; do
      cuobjdump -sass $B/bench_$b 2>/dev/null |
        awk '/Function : .*fused_reconstruct_wgmma_kernelILj3ELb0/{on=1} on&&/Function : /&&!/ILj3ELb0/{on=0} on' > $OUT/sass-$b.txt
      echo "sass $b: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/sass-$b.txt) instructions"
    done
    ;;
  *)
    echo "unknown part $part" >&2
    exit 2
    ;;
esac
