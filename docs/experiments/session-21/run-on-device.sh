#!/usr/bin/env bash
# On the GPU host (device tool, carry ["bundle/svdserve.tar.xz", "bundle/quick21.tar.xz"]), from
# the repository root. bundle/svdserve.tar.xz is main before the tensor-map store (3387802, its
# bench is "main"); quick21 is build-variants.sh's.
#   tma: the GPU kernel tests of tma; racecheck and synccheck on the new tests; main, tma and
#        nostore at k = 16, 64 and 256 (--quick, 3 channels, two rounds, main first in each);
#        the SASS of the 3-channel kernel of each, counted by opcode, where cuobjdump is.
#   final: (bundle/svdserve.tar.xz of the commit under test, BUNDLE=bundle/quick21b.tar.xz: the
#        benches of main at 3387802, tma and nostore) the bundle's bench ("final": tma, and the
#        lower tile past the image no longer loaded or multiplied) against main and tma, two
#        rounds.
#   perm: (BUNDLE=bundle/quick21c.tar.xz: main at 3387802, final at 22a5411, perm) perm's GPU
#        kernel tests; main, final and perm at k = 16, 64 and 256, two rounds; perm's
#        shared-memory store wavefronts and bank conflicts under ncu at 4096², k = 16 (as
#        run-ncu.sh measured final's).
#   fence: (the bundle of the final commit, BUNDLE=bundle/quick21d.tar.xz: perm's bench at
#        4ce12ae) the bundle's bench, which acquires each task's tensor map before its first
#        store, against perm, two rounds.
#   stagger: (the bundle of ca070b8, whose bench is "main", BUNDLE=bundle/quick21e.tar.xz)
#        consumer 1 started 2 (stag1) or 4 (stag3) steps behind instead of 3, two rounds.
set -u
part=${1:?usage: run-on-device.sh tma}
mkdir -p /tmp/m /tmp/q
tar -C /tmp/m -xJf "${MAIN:-bundle/svdserve.tar.xz}"
tar -C /tmp/q -xJf "${BUNDLE:-bundle/quick21.tar.xz}"
R=/tmp/m/svdserve
B=/tmp/q/svdserve/bin
export LD_LIBRARY_PATH=$R/lib SVDSERVE_TEST_IMAGES=$R/tests/data/images
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -e $B/bench_main ] || cp $R/bin/svdserve_reconstruct_bench $B/bench_main

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

case "$part" in
  tma)
    timeout 200 $B/tests_tma --gtest_brief=1 > $OUT/tests-tma.log 2>&1
    echo "tests_tma rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-tma.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-tma.log | head -5
    for sr in 4096x4096:16 1024x1024:16 2048x2048:16 1920x1080:16 256x256:16 4096x4096:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 tma nostore
    done
    if command -v cuobjdump > /dev/null; then
      for b in main tma; do
        cuobjdump -sass -fun '_ZN8svdserve3gpu59_GLOBAL__N__2350f0ec_26_reconstruct_fused_wgmma_cu_70e7650330fused_reconstruct_wgmma_kernelILj3ELb0EEEvPKNS0_15ReconstructTaskEjjj' $B/bench_$b > $OUT/sass-$b.txt 2>&1 ||
          cuobjdump -sass $B/bench_$b 2>/dev/null | awk '/Function : .*fused_reconstruct_wgmma_kernelILj3ELb0/{on=1} on&&/Function : /&&!/ILj3ELb0/{on=0} on' > $OUT/sass-$b.txt
        echo "sass $b: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/sass-$b.txt) instructions; $(grep -oE 'STS\.U8|UTMASTG|UBLKCP|LOP3|IADD3|LEA|SHF' $OUT/sass-$b.txt | sort | uniq -c | tr '\n' ' ')"
      done
    fi
    T=$B/tests_tma
    for f in 'GpuReconstructTest.BlocksThatLoopOverTilesStoredByTensorMaps*:GpuReconstructTest.TensorMapAndThreadStores*'; do
      for tool in racecheck synccheck; do
        timeout 150 compute-sanitizer --tool $tool --kernel-name kns=svdserve --error-exitcode 9 $T --gtest_filter="$f" > /tmp/san.log 2>&1
        echo "$tool rc=$?: $(grep -E 'SUMMARY' /tmp/san.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' /tmp/san.log | tr '\n' ' ')"
        grep -E -A1 'Race reported between' /tmp/san.log | grep -oE '(bulk_load|zero_us_from|round_into_[a-z]*|tensor_store[a-z_]*|bulk_store[a-z_]*|copy_out[a-z_]*)\(' | sort | uniq -c
        cat /tmp/san.log >> $OUT/sanitizer-tma.log
      done
    done
    ;;
  final)
    cp $R/bin/svdserve_reconstruct_bench $B/bench_final
    for sr in ${ROWS:-1920x1080:16 1920x1080:64 1920x1080:256}; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 tma final
    done
    ;;
  perm)
    timeout 200 $B/tests_perm --gtest_brief=1 > $OUT/tests-perm.log 2>&1
    echo "tests_perm rc=$?: $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' $OUT/tests-perm.log | tr '\n' ' ')"
    grep -E '^\[  FAILED' $OUT/tests-perm.log | head -5
    for sr in ${ROWS:-4096x4096:16 1024x1024:16 2048x2048:16 1920x1080:16 256x256:16 4096x4096:64 1024x1024:64 1920x1080:64 4096x4096:256 1024x1024:256}; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 final perm
    done
    for b in final perm; do
      timeout 120 ncu --clock-control none --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum \
        -k regex:fused_reconstruct_wgmma -s 2 -c 1 $B/bench_$b --quick --size 4096x4096 --rank 16 > $OUT/ncu-$b.txt 2>&1
      echo "ncu $b: $(grep -E 'l1tex__|sm__cycles|gpu__time' $OUT/ncu-$b.txt | awk '{print $1, $NF}' | tr '\n' ' ')"
    done
    ;;
  fence)
    cp $R/bin/svdserve_reconstruct_bench $B/bench_fence
    cp $B/bench_perm $B/bench_main  # compare() runs "main" first: here 4ce12ae
    for sr in ${ROWS:-4096x4096:16 1024x1024:16 1920x1080:16 4096x4096:64 1024x1024:64 4096x4096:256}; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 fence
    done
    ;;
  stagger)
    for sr in ${ROWS:-4096x4096:16 1024x1024:16 1920x1080:16 4096x4096:64 1024x1024:64 4096x4096:256}; do
      runs=2 limit=25 compare ${sr%:*} ${sr#*:} 3 stag1 stag3
    done
    ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
