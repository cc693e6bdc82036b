#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick24c.tar.xz"]), from
# the repository root: the wgmma kernel with a ring of a power of two stages (ring-pow2.patch: 4
# with 3 channels instead of 5) against main (the bundle's benchmark): its GPU kernel tests, then
# both full kernel benchmarks alternating, $tables rounds (3).
set -u
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf bundle/svdserve.tar.xz
tar -C /tmp/q -xJf bundle/quick24c.tar.xz
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
cp $R/bin/svdserve_reconstruct_bench $B/bench_main
timeout 200 $B/tests_pow2 --gtest_brief=1 > $OUT/tests-pow2.log 2>&1
echo "tests_pow2 rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-pow2.log | tr '\n' ' ')"
for run in $(seq "${tables:-3}"); do
  for b in main pow2; do
    timeout 120 $B/bench_$b > $OUT/table-$b-$run.txt 2>&1
    echo "$b round $run rc=$?: $(grep -E 'random operands' $OUT/table-$b-$run.txt | grep -oE 'SM clock [0-9.]+ GHz')"
    grep -E '^[0-9]+x[0-9]+ ' $OUT/table-$b-$run.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $14} END {print ""}'
  done
done
