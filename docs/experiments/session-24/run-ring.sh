#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/$BUNDLE"]), from the
# repository root: a variant of the wgmma kernel (tests_$NAME and bench_$NAME in $BUNDLE) against
# main (the bundle's benchmark): its GPU kernel tests, then both full kernel benchmarks
# alternating, $tables rounds (3).
#   call 13: NAME=pow2 BUNDLE=quick24c.tar.xz (ring-pow2.patch: 4 stages with 3 channels)
#   call 16: NAME=ctr BUNDLE=quick24e.tar.xz (the ring's position as counters, 5 stages: d871780)
set -u
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf bundle/svdserve.tar.xz
NAME=${NAME:-pow2}
tar -C /tmp/q -xJf "bundle/${BUNDLE:-quick24c.tar.xz}"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
cp $R/bin/svdserve_reconstruct_bench $B/bench_main
timeout 200 $B/tests_$NAME --gtest_brief=1 > $OUT/tests-$NAME.log 2>&1
echo "tests_$NAME rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$NAME.log | tr '\n' ' ')"
for run in $(seq "${tables:-3}"); do
  for b in main $NAME; do
    timeout 120 $B/bench_$b > $OUT/table-$b-$run.txt 2>&1
    echo "$b round $run rc=$?: $(grep -E 'random operands' $OUT/table-$b-$run.txt | grep -oE 'SM clock [0-9.]+ GHz')"
    grep -E '^[0-9]+x[0-9]+ ' $OUT/table-$b-$run.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $14} END {print ""}'
  done
done
