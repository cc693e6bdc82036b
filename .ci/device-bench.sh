#!/usr/bin/env bash
# Runs on the GPU machine (the device tool), from the repository root, with the portable bundle
# carried (.ci/bundle.sh): the benchmarks of docs/PERFORMANCE.md, each printing its table and
# ratio to a limit measured in the same run. Tables go to stdout and $OUT/*.txt, JSON into
# $OUT/bench-json.tar (the device tool returns at most 8 files).
#   usage: .ci/device-bench.sh [quick] [only=kernel,pipeline,svd,rsvd,e2e,e2e-stream,ingest,cpu,
#                                            multi-gpu,multi-gpu-e2e]
# (e2e: unary Reconstruct against Echo; e2e-stream: the same through ReconstructStream, 4 items a
# stream, as `svdserve-cli run` sends them; not in the default set. ingest: JPEG and PNG photos
# decomposed and compressed over gRPC beside the randomized SVD's rate. cpu: the CPU backend
# against numpy on the host's cores, bench/cpu_vs_numpy.py. multi-gpu: one backend over 1, 2, 4 ...
# of the host's GPUs in process; multi-gpu-e2e: the same over gRPC; for multi-GPU hosts, not in
# the default set.)
set -uo pipefail
out="${OUT:-/tmp/svdserve-out}"
mkdir -p "$out/json"
quick=""; only="kernel,pipeline,svd,rsvd,e2e,ingest,cpu"
for arg in "$@"; do
  case "$arg" in
    quick) quick="--quick" ;;
    only=*) only="${arg#only=}" ;;
  esac
done
work=/tmp/svdserve-bundle
if [ ! -x "$work/svdserve/bin/svdserve" ]; then
  rm -rf "$work" && mkdir -p "$work" && tar -C "$work" -xJf bundle/svdserve.tar.xz
fi
root="$work/svdserve"
export SVDSERVE_TEST_IMAGES="$root/tests/data/images"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
wants() { [[ ",$only," == *",$1,"* ]]; }
run() {  # name, command...: table to stdout and $out/name.txt
  local name="$1"; shift
  echo; echo "=== $name: $*"
  "$@" 2>&1 | tee "$out/$name.txt"
  echo "=== $name exit ${PIPESTATUS[0]}"
}
wants kernel && run reconstruct-bench "$root/bin/svdserve_reconstruct_bench" $quick --json "$out/json/reconstruct.json"
wants multi-gpu && run multi-gpu-bench "$root/bin/svdserve_multi_gpu_bench" $quick
wants pipeline && run pipeline-bench "$root/bin/svdserve_pipeline_bench" $quick --json "$out/json/pipeline.json"
wants rsvd && run rsvd-bench "$root/bin/svdserve_rsvd_bench" --json "$out/json/rsvd.json"
wants svd && run svd-bench "$root/bin/svdserve_svd_bench" $quick --images "$SVDSERVE_TEST_IMAGES" --json "$out/json/svd.json"
if wants e2e || wants e2e-stream || wants ingest || wants multi-gpu-e2e; then
  # e2e_bench.sh expects a build tree; point one at the bundle's binaries.
  fake=/tmp/svdserve-e2e-build && mkdir -p "$fake/client" "$fake/server"
  ln -sf "$root/bin/svdserve-cli" "$fake/client/svdserve-cli"
  ln -sf "$root/bin/svdserve" "$fake/server/svdserve"
  wants multi-gpu-e2e && run multi-gpu-e2e bash bench/multi_gpu_e2e.sh "$fake" "$out/multi-gpu-e2e"
  wants e2e && E2E_DURATION="${E2E_DURATION:-3}" run e2e-bench bash bench/e2e_bench.sh "$fake" "$out/json"
  # 4 items a stream unless E2E_STREAM_ITEMS says otherwise; streams past the server's shared
  # stream budget wait rather than fail (server/grpc/stream_budget.hpp).
  wants e2e-stream && E2E_OP=stream E2E_STREAM_ITEMS="${E2E_STREAM_ITEMS:-4}" \
    E2E_DURATION="${E2E_DURATION:-3}" run e2e-stream-bench bash bench/e2e_bench.sh "$fake" "$out/json"
  wants ingest && INGEST_RSVD_BENCH="$root/bin/svdserve_rsvd_bench" \
    run ingest-bench bash bench/ingest_bench.sh "$fake" "$out/json/ingest"
fi
wants cpu && run cpu-vs-numpy python3 bench/cpu_vs_numpy.py --svdserve "$root/bin/svdserve" \
  --cli "$root/bin/svdserve-cli" --images "$SVDSERVE_TEST_IMAGES"
tar -C "$out" -cf "$out/bench-json.tar" json && rm -rf "$out/json"
