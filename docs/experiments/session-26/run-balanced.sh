#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/quick26a.tar.xz",
# "bundle/quick26c.tar.xz"]), from the repository root (call 5): the wgmma kernel launched on as
# few blocks as keep the busiest block's pairs (balanced-blocks.patch: bench_balanced,
# tests_balanced) against main (bench_final): its GPU tests, then full tables alternating in the
# order final, balanced, balanced, final, final, balanced.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
for b in quick26a quick26c; do tar -C /tmp/q -xJf bundle/$b.tar.xz; done
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
timeout 200 $B/tests_balanced --gtest_brief=1 > /tmp/r/tests-balanced.log 2>&1
echo "tests_balanced rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' /tmp/r/tests-balanced.log | tr '\n' ' ')"
i=0
for b in final balanced balanced final final balanced; do
  i=$((i + 1))
  timeout 120 $B/bench_$b > /tmp/r/table-$i-$b.txt 2>&1
  echo "$i $b rc=$?: $(grep -E '^correctness|^target >= 80' /tmp/r/table-$i-$b.txt | tr '\n' ' ')"
  grep -E '^[0-9]+x[0-9]+ ' /tmp/r/table-$i-$b.txt | awk '{printf "%s/%s %s %s|", $1, $4, $11, $19} END {print ""}'
done
tar -C /tmp/r -cJf "$OUT/call-5.tar.xz" .
