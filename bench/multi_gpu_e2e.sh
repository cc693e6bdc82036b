#!/usr/bin/env bash
# End to end over gRPC on loopback with the server sharding over 1, 2, 4 ... GPUs: 1024² RGB
# reconstructs (rank 16, the image under 64 ids so that every device holds some) against Echo
# of the same sizes, at concurrency 16 and 64, one bench/e2e_bench.sh run per device set.
#
# Usage: bench/multi_gpu_e2e.sh [BUILD_DIR (build)] [OUT_DIR (multi-gpu-e2e-out)]
# Env: E2E_DURATION seconds per run (3), E2E_SWEEP (16,64), SVDSERVE_PORT (50061).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
out="${2:-multi-gpu-e2e-out}"
gpus=$(nvidia-smi --list-gpus | wc -l)
sets=("0")
n=2
while [ "$n" -le "$gpus" ]; do
  sets+=("$(seq -s, 0 $((n - 1)))")
  n=$((n * 2))
done
for devices in "${sets[@]}"; do
  echo; echo "=== --gpu-devices $devices"
  E2E_SIZES=1024 E2E_IDS=64 E2E_SWEEP="${E2E_SWEEP:-16,64}" E2E_DURATION="${E2E_DURATION:-3}" \
    E2E_SERVER_ARGS="--gpu-devices $devices --durability none --metrics-port 0" \
    bash bench/e2e_bench.sh "$build" "$out/gpus-$devices" | grep -Ev "^\s*$"
done
