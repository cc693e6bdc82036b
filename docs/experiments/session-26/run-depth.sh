#!/usr/bin/env bash
# On the GPU host (device tool, carry as run-stores.sh), from the repository root (call 3): does
# the data movement follow the ring's depth? 1 channel gives the kernel 7 stages, 3 channels 5;
# time per k-step of each part alone (bench_nostore: loads; bench_stores: stores; bench_stream:
# both) and of the kernel (bench_final), 4096², k = 64 and 256, two runs each.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/m /tmp/q /tmp/r
[ -d /tmp/m/svdserve ] || tar -C /tmp/m -xJf bundle/libs.tar.xz
for b in quick26a quick26b; do tar -C /tmp/q -xJf bundle/$b.tar.xz; done
export LD_LIBRARY_PATH=/tmp/m/svdserve/lib
B=/tmp/q/svdserve/bin
for run in 1 2; do
  for b in final stream stores nostore; do
    for c in 1 3; do
      for k in 64 256; do
        f=/tmp/r/$b-c$c-k$k-$run.txt
        timeout 60 $B/bench_$b --channels $c --size 4096x4096 --rank $k > $f 2>&1
        grep -E '^4096x4096 ' $f | awk -v b=$b '{steps = $3 * 32 * 32 * $2 * int(($4 + 15) / 16) / 2 / 132;
          printf "%s c=%s batch=%s k=%s wgmma_ms=%s ns_per_step=%.0f %%fl_wg=%s\n", b, $2, $3, $4, $11, $11 * 1e6 / steps, $19}'
      done
    done
  done
done
tar -C /tmp/r -cJf "$OUT/call-3.tar.xz" .
