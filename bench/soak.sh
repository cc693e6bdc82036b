#!/usr/bin/env bash
# Soak: a mixed workload against one server for a given time — Reconstruct, ReconstructStream,
# Compress and Decompose at once (`svdserve-cli bench`), plus a loop that uploads and deletes
# images and sends bad requests (a truncated JPEG, a text file, an unknown id, a rank too high),
# whose refusals are expected. Prints the calls by status code, and the server's RSS and open
# file descriptors at start (after warm-up), every minute and at the end.
# Fails on any unexpected error, or when RSS or descriptors grow past the bounds below.
#
# Usage: bench/soak.sh [BUILD_DIR (build)] [SECONDS (600)] [backend: cpu|gpu|auto (auto)]
# Env: SVDSERVE_PORT (50063), SVDSERVE_TEST_IMAGES, SOAK_RSS_GROWTH_MIB (256),
#      SOAK_SERVER_ARGS (more server flags, e.g. "--gpu-memory-fraction 0.3")
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
seconds="${2:-600}"
backend="${3:-auto}"
port="${SVDSERVE_PORT:-50063}"
images="${SVDSERVE_TEST_IMAGES:-tests/data/images}"
rss_growth_bound_mib="${SOAK_RSS_GROWTH_MIB:-256}"
cli=("$build/client/svdserve-cli" --server "127.0.0.1:$port" --timeout 30)
work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  jobs -p | xargs -r kill 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }
fds() { find "/proc/$server_pid/fd" -mindepth 1 -maxdepth 1 | wc -l; }
sample() { echo "  $1: RSS $(( $(rss_kib) / 1024 )) MiB, $(fds) fds"; }

"$build/server/svdserve" --config config/svdserve.textproto --listen "127.0.0.1:$port" \
  --backend "$backend" --metrics-port 0 --log-level warn ${SOAK_SERVER_ARGS:-} \
  > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 300); do
  "${cli[@]}" --timeout 1 health >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log"; exit 1; }
  sleep 0.2
done

photo="$images/building.jpg"
head -c 20000 "$images/baboon.jpg" > "$work/truncated.jpg"
echo "not an image" > "$work/text.png"
"${cli[@]}" decompose "$photo" --id soak-held --max-rank 64 >/dev/null
# Warm-up: every path once, so start-of-run allocations are not counted as growth.
"${cli[@]}" bench --op reconstruct --id soak-held --rank 16 --count 64 --json - >/dev/null 2>&1
echo "soak: ${seconds} s on $("${cli[@]}" server-info | awk '/^backend/ {print $2}') backend"
sample start
start_rss=$(rss_kib); start_fds=$(fds)

run_bench() {  # name, bench args...
  local name="$1"; shift
  "${cli[@]}" bench "$@" --duration "$seconds" --json "$work/$name.json" >/dev/null 2>&1 || true
}
load_pids=()
run_bench reconstruct --op reconstruct --id soak-held --rank 16 --concurrency 4 & load_pids+=($!)
run_bench stream --op stream --id soak-held --rank 32 --stream-items 8 --concurrency 2 & load_pids+=($!)
run_bench compress --op compress --image "$images/fruits.jpg" --rank 20 --format png \
  --concurrency 2 & load_pids+=($!)
run_bench decompose --op decompose --image "$images/home.jpg" --concurrency 2 & load_pids+=($!)

# The status a CLI command ended with: OK, or the first status code name in its error.
outcome() {
  local out
  if out=$("$@" 2>&1); then echo OK; else grep -o -m1 -E '[A-Z_]{5,}' <<<"$out" || echo FAILED; fi
}
# Uploads, deletes and bad requests; each outcome counted by the status the CLI reports.
churn() {
  local end=$((SECONDS + seconds)) n=0
  while [ "$SECONDS" -lt "$end" ]; do
    n=$((n + 1))
    echo "upload $(outcome "${cli[@]}" decompose "$images/pic1.png" --id "soak-$n" --max-rank 16)"
    echo "delete $(outcome "${cli[@]}" delete "soak-$n")"
    echo "bad:truncated-jpeg $(outcome "${cli[@]}" decompose "$work/truncated.jpg" --id soak-bad)"
    echo "bad:not-an-image $(outcome "${cli[@]}" decompose "$work/text.png" --id soak-bad)"
    echo "bad:unknown-id $(outcome "${cli[@]}" reconstruct "soak-missing-$n" --rank 1 -o "$work/out.png")"
    echo "bad:rank-too-high $(outcome "${cli[@]}" reconstruct soak-held --rank 65 -o "$work/out.png")"
  done > "$work/churn.txt"
}
churn & load_pids+=($!)

elapsed=0
while [ "$elapsed" -lt "$seconds" ]; do
  step=$(( seconds - elapsed < 60 ? seconds - elapsed : 60 ))
  sleep "$step"   # the sampling period, not a wait for an event
  elapsed=$((elapsed + step))
  sample "${elapsed} s"
done
wait "${load_pids[@]}"
end_rss=$(rss_kib); end_fds=$(fds)

echo "calls by status (expected refusals: bad:*):"
sort "$work/churn.txt" | uniq -c | sed 's/^/  /'
expected='^(upload OK|delete OK|bad:truncated-jpeg INVALID_ARGUMENT|bad:not-an-image INVALID_ARGUMENT|bad:unknown-id NOT_FOUND|bad:rank-too-high INVALID_ARGUMENT)$'
unexpected=$({ grep -v -E "$expected" "$work/churn.txt" || true; } | wc -l)  # grep: 1 when none
for name in reconstruct stream compress decompose; do
  if ! python3 - "$work/$name.json" "$name" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"  bench {sys.argv[2]}: {report['succeeded']} OK at {report['images_per_second']:.1f}/s, "
      f"p99 {report['latency_ms']['p99']:.1f} ms, errors {report['errors'] or 'none'}")
sys.exit(1 if report['errors'] else 0)
PY
  then unexpected=$((unexpected + 1)); fi
done
growth_mib=$(( (end_rss - start_rss) / 1024 ))
echo "server: RSS $((start_rss / 1024)) -> $((end_rss / 1024)) MiB (${growth_mib} MiB), fds ${start_fds} -> ${end_fds}"
status=0
[ "$unexpected" -eq 0 ] || { echo "soak: $unexpected unexpected outcomes"; status=1; }
[ "$growth_mib" -le "$rss_growth_bound_mib" ] || { echo "soak: RSS grew more than ${rss_growth_bound_mib} MiB"; status=1; }
[ "$end_fds" -le $((start_fds + 16)) ] || { echo "soak: file descriptors grew"; status=1; }
kill -0 "$server_pid" || { echo "soak: the server died"; status=1; }
exit "$status"
