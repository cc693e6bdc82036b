#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick24.tar.xz"]), from
# the repository root: the benches of build-rows-benches.sh (or $VARIANTS of them) alternating on
# single rows at k = 1 of the full benchmark (full batches), $runs rounds (3); prints rows_ms and
# % of floor per size and variant.
set -u
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf "${MAIN:-bundle/svdserve.tar.xz}"
tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick24.tar.xz}"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
start=$SECONDS
for size in ${SIZES:-256x256 1920x1080 4096x4096 1024x1024 2048x2048}; do
  for run in $(seq "${runs:-3}"); do
    line="$size k=${RANK:-1} round $run:"
    for b in ${VARIANTS:-base p2 p4 i4 p8}; do
      timeout 40 $B/bench_$b --size $size --rank ${RANK:-1} > /tmp/q.log 2>&1
      rc=$?
      cat /tmp/q.log >> $OUT/rows-$b.txt
      line="$line $b=$(grep -E '^[0-9]+x[0-9]+ ' /tmp/q.log | awk '{print $9 "ms/" $14 "/" substr($NF,1,4) substr($0, index($0,"PASS"), 4)}')(rc$rc)"
    done
    echo "$line"
  done
done
echo "took $((SECONDS - start)) s"
