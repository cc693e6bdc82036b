#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/quick27b.tar.xz"]), from the
# repository root (call 5; call 4 ran the same with quick27a, the summary before the limit was
# measured twice): the pipeline benchmark with its per-row summary and target lines, three full
# runs, so that the one-stream share's spread between runs shows.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf bundle/libs.tar.xz
tar -C /tmp/q -xJf bundle/quick27b.tar.xz
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
lscpu | grep -iE "^(NUMA|Socket|Model name)"
for i in 1 2 3; do
  timeout 150 /tmp/q/svdserve/bin/svdserve_pipeline_bench --json "$OUT/pipeline-$i.json" > "$OUT/pipeline-$i.txt" 2>&1
  echo "run $i rc=$?"; grep "^pinned D2H" "$OUT/pipeline-$i.txt"; sed -n "/^summary/,\$p" "$OUT/pipeline-$i.txt"
done
