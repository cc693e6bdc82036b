#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/$BUNDLE"], or with
# LIBS=libs.tar.xz "bundle/libs.tar.xz" instead of the whole bundle), from the repository root:
# variants of the wgmma kernel (tests_NAME and bench_NAME in $BUNDLE) against a
# base (bench_$BASE): each variant's GPU kernel tests, then the full kernel benchmark of the base
# and of each variant, alternating, $tables rounds (2). Session 24's run-ring.sh for several.
#   call 5: BUNDLE=quick25b.tar.xz BASE=base NAMES="lead1 lead2" (the consumers' stagger)
set -u
mkdir -p /tmp/m /tmp/q
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/${LIBS:-svdserve.tar.xz}
tar -C /tmp/q -xJf "bundle/$BUNDLE"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for name in $NAMES; do
  timeout 200 $B/tests_$name --gtest_brief=1 > $OUT/tests-$name.log 2>&1
  echo "tests_$name rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-$name.log | tr '\n' ' ')"
done
for run in $(seq "${tables:-2}"); do
  for b in $BASE $NAMES; do
    timeout 120 $B/bench_$b > $OUT/table-$b-$run.txt 2>&1
    echo "$b round $run rc=$?: $(grep -E 'random operands' $OUT/table-$b-$run.txt | grep -oE 'SM clock [0-9.]+ GHz' | head -1) $(grep -E '^correctness' $OUT/table-$b-$run.txt)"
    grep -E '^[0-9]+x[0-9]+ ' $OUT/table-$b-$run.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $14} END {print ""}'
  done
done
cd "$OUT" && tar -cJf tables.tar.xz table-*.txt tests-*.log && rm -f table-*.txt tests-*.log
