#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick25c.tar.xz"]), from
# the repository root (call 6): .ci/device-check.sh on the bundle of the final kernel, then its full
# kernel benchmark against main before the session (bench_old in quick25c: ab6524f's kernel) in
# the order old, new, new, old, old, new, so that an order effect cancels.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/check" /tmp/q
start=$SECONDS
OUT=$OUT/check timeout 450 bash .ci/device-check.sh > "$OUT/device-check.out" 2>&1
echo "device-check rc=$? in $((SECONDS - start)) s"; tail -15 "$OUT/device-check.out"
tar -C /tmp/q -xJf bundle/quick25c.tar.xz
R=/tmp/svdserve-bundle/svdserve  # unpacked by device-check.sh
[ -d $R ] || { mkdir -p /tmp/svdserve-bundle && tar -C /tmp/svdserve-bundle -xJf bundle/svdserve.tar.xz; }
export LD_LIBRARY_PATH=$R/lib
cp $R/bin/svdserve_reconstruct_bench /tmp/q/svdserve/bin/bench_new
run=0
for b in old new new old old new; do
  run=$((run + 1))
  timeout 100 /tmp/q/svdserve/bin/bench_$b > "$OUT/table-$run-$b.txt" 2>&1
  echo "$b ($run) rc=$?: $(grep -E 'random operands' "$OUT/table-$run-$b.txt" | grep -oE 'SM clock [0-9.]+ GHz' | head -1) $(grep -E '^correctness' "$OUT/table-$run-$b.txt")"
  grep -E '^[0-9]+x[0-9]+ ' "$OUT/table-$run-$b.txt" | awk '{printf "%s/%s %s %s|", $1, $4, $11, $14} END {print ""}'
  grep -E 'loop alone' "$OUT/table-$run-$b.txt" | grep -oE 'every [0-9]+ steps: .*' | head -3
done
cd "$OUT" && tar -cJf tables.tar.xz table-*.txt && rm -f table-*.txt
echo "all took $((SECONDS - start)) s"
