#!/usr/bin/env bash
# Decompose over gRPC per durability mode: images/s of `svdserve-cli bench --op decompose` (max
# rank 64, ids made up by the server, so every call adds an image to the repository) against a
# server started with --durability none, async and sync on a fresh data folder, and the ratio of
# each to none (memory only: the compute bound) measured in the same run. Beside them, the
# folder's own limit in the same run: one entry's bytes written, fsync'd and renamed, back to back
# (svdserve_repository_bench's "put"), which bounds sync writes per thread.
#
# Usage: bench/durability_bench.sh [BUILD_DIR (build)] [OUT_DIR (durability-bench-out)]
# Env: DURABILITY_IMAGE (tests/data/images/baboon.jpg), DURABILITY_CONCURRENCY (8),
# DURABILITY_PERSIST_THREADS (the servers' --persist-threads; default the config's),
# DURABILITY_DURATION seconds (10), DURABILITY_BACKEND (auto), DURABILITY_DATA_DIR (a folder
# below OUT_DIR; put it on the disk to measure), SVDSERVE_PORT (50063).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
out="${2:-durability-bench-out}"
image="${DURABILITY_IMAGE:-tests/data/images/baboon.jpg}"
concurrency="${DURABILITY_CONCURRENCY:-8}"
duration="${DURABILITY_DURATION:-10}"
backend="${DURABILITY_BACKEND:-auto}"
data_dir="${DURABILITY_DATA_DIR:-$out/data}"
port="${SVDSERVE_PORT:-50063}"
persist=()
if [ -n "${DURABILITY_PERSIST_THREADS:-}" ]; then persist=(--persist-threads "$DURABILITY_PERSIST_THREADS"); fi
cli=("$build/client/svdserve-cli" --server "127.0.0.1:$port")
mkdir -p "$out"

server_pid=""
start_server() {  # extra server flags...
  "$build/server/svdserve" --config config/svdserve.textproto --listen "127.0.0.1:$port" \
    --backend "$backend" --log-level warn --memory-budget-mib 2048 "$@" &
  server_pid=$!
  for _ in $(seq 1 300); do
    if "${cli[@]}" --timeout 1 health >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "durability_bench: the server exited" >&2; exit 1; fi
    sleep 0.2
  done
  echo "durability_bench: the server did not become ready" >&2
  exit 1
}
stop_server() {
  if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap stop_server EXIT

for mode in none async sync; do
  rm -rf "$data_dir"
  start_server --durability "$mode" --data-dir "$data_dir" "${persist[@]}"
  echo "== durability $mode"
  "${cli[@]}" bench --op decompose --image "$image" --max-rank 64 --concurrency "$concurrency" \
    --duration "$duration" --warmup 16 --json "$out/durability_$mode.json"
  stop_server
done
rm -rf "$data_dir"

if [ -x "$build/bench/svdserve_repository_bench" ]; then
  echo "== svdserve_repository_bench (the folder's limits, same disk)"
  repository_backend="cpu"
  if [ "$backend" = gpu ]; then repository_backend=gpu; fi
  "$build/bench/svdserve_repository_bench" --backend "$repository_backend" --size 512 --rank 64 \
    --data-dir "$data_dir" | tee "$out/repository.txt"
fi

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rows = {mode: json.load(open(f"{out}/durability_{mode}.json")) for mode in ("none", "async", "sync")}
base = rows["none"]["images_per_second"]
print()
print(f"{'durability':<10} {'images/s':>10} {'p50 ms':>8} {'p99 ms':>8}  to none")
for mode, row in rows.items():
    errors = sum(row["errors"].values())
    note = f"{row['images_per_second'] / base:.3f}" + (f", {errors} failed" if errors else "")
    print(f"{mode:<10} {row['images_per_second']:>10.1f} {row['latency_ms']['p50']:>8.2f} "
          f"{row['latency_ms']['p99']:>8.2f}  {note}")
PY
