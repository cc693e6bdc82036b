#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/libs.tar.xz", "bundle/$BUNDLE.tar.xz"]), from the
# repository root: the pipeline benchmark (rows printed as they are measured again), once cut off
# after 20 s (its rows so far must be in the output) and once in full. Call 1: BUNDLE=quick28a
# (8f38318); call 2: BUNDLE=quick28b (7097960, the final code).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf bundle/libs.tar.xz
tar -C /tmp/q -xJf "bundle/${BUNDLE:-quick28a}.tar.xz"
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
bench=/tmp/q/svdserve/bin/svdserve_pipeline_bench
timeout 20 "$bench" > "$OUT/pipeline-cut.txt" 2>&1
echo "cut run rc=$? (124: cut as intended), $(grep -c '^measured' "$OUT/pipeline-cut.txt") rows kept"
head -4 "$OUT/pipeline-cut.txt"
timeout 150 "$bench" --json "$OUT/pipeline-full.json" > "$OUT/pipeline-full.txt" 2>&1
echo "full run rc=$?"; grep "^pinned D2H" "$OUT/pipeline-full.txt"; sed -n "/^summary/,\$p" "$OUT/pipeline-full.txt"
