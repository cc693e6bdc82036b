#!/usr/bin/env bash
# Benchmark 4, end to end over gRPC on loopback: for 256², 512² and 1024² RGB images, reconstruct
# against Echo of the same message sizes (the transport's limit) at concurrency 1..64, with
# `svdserve-cli bench --sweep`. Starts its own server (GPU backend when there is one), makes the
# 256² and 1024² images from the 512² sample, prints one table per size, writes JSON, stops the
# server with SIGTERM. The target: reconstruct >= 80% of echo's images/s for 1024².
#
# Usage: bench/e2e_bench.sh [BUILD_DIR (build)] [OUT_DIR (e2e-bench-out)]
# Env: E2E_SWEEP (1,2,4,8,16,32,64), E2E_DURATION seconds per run (5), E2E_WARMUP requests
# before each run (128), E2E_RANK (16), E2E_BACKEND (auto), SVDSERVE_PORT (50061),
# E2E_SERVER_ARGS (extra server flags, e.g. "--max-queue-delay-us 0"), E2E_OP (reconstruct, or
# stream: ReconstructStream of E2E_STREAM_ITEMS (16) per request, what `svdserve-cli run` sends;
# keep C x N within the server's queue, 256 by default, or items fail with RESOURCE_EXHAUSTED),
# E2E_SIZES (256 512 1024: which of the three), E2E_IDS (1: the image under N ids, reconstructed
# in turn, so that a multi-GPU server holds it on every device).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
out="${2:-e2e-bench-out}"
sweep="${E2E_SWEEP:-1,2,4,8,16,32,64}"
duration="${E2E_DURATION:-5}"
warmup="${E2E_WARMUP:-128}"
rank="${E2E_RANK:-16}"
op="${E2E_OP:-reconstruct}"
op_args=(--op "$op")
[ "$op" = stream ] && op_args+=(--stream-items "${E2E_STREAM_ITEMS:-16}")
[ "${E2E_IDS:-1}" != 1 ] && op_args+=(--ids "$E2E_IDS")
sizes=" ${E2E_SIZES:-256 512 1024} "
backend="${E2E_BACKEND:-auto}"
port="${SVDSERVE_PORT:-50061}"
cli=("$build/client/svdserve-cli" --server "127.0.0.1:$port")
mkdir -p "$out"

"$build/server/svdserve" --config config/svdserve.textproto --listen "127.0.0.1:$port" \
  --backend "$backend" --log-level warn ${E2E_SERVER_ARGS:-} &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 150); do
  if "${cli[@]}" --timeout 1 health >/dev/null 2>&1; then break; fi
  if ! kill -0 $server_pid 2>/dev/null; then echo "e2e_bench: the server exited" >&2; exit 1; fi
  sleep 0.2
done
"${cli[@]}" server-info

# The 512² sample at full rank, written as PPM here, then resized: 256² and 1024² inputs.
images=(tests/data/images/baboon.jpg)
"${cli[@]}" decompose tests/data/images/baboon.jpg --id e2e-source --max-rank 512 >/dev/null
"${cli[@]}" reconstruct e2e-source --rank 512 -o "$out/baboon512.ppm" >/dev/null
"${cli[@]}" delete e2e-source >/dev/null
if command -v python3 >/dev/null; then
  for n in 256 1024; do
    python3 bench/resize_ppm.py "$out/baboon512.ppm" "$out/baboon$n.ppm" "$n"
  done
  images=("$out/baboon256.ppm" tests/data/images/baboon.jpg "$out/baboon1024.ppm")
else
  echo "e2e_bench: no python3, so no 256² and 1024² images; only the 512² sample" >&2
fi

# A run with failed calls (e.g. RESOURCE_EXHAUSTED when C streams of N items hold more than the
# server's queue) still reports them; the other sizes still run, and the exit status says so.
status=0
for image in "${images[@]}"; do
  name="$(basename "${image%.*}")"
  size="${name#baboon}"; [ "$size" = baboon ] && size=512
  [[ "$sizes" == *" $size "* ]] || continue
  echo
  "${cli[@]}" bench "${op_args[@]}" --image "$image" --rank "$rank" --sweep "$sweep" \
    --duration "$duration" --warmup "$warmup" --json "$out/e2e_${op}_$name.json" || status=$?
done

# One line per size: peak images/s of each, their ratio, and the best per-concurrency ratio.
if command -v python3 >/dev/null; then
  echo
  python3 - "$out"/e2e_"$op"_*.json <<'PY'
import json, sys
for path in sys.argv[1:]:
    report = json.load(open(path))
    rows = report['rows']
    op_peak = max(row['op']['images_per_second'] for row in rows)
    echo_peak = max(row['echo']['images_per_second'] for row in rows)
    best = max(rows, key=lambda row: row['op_to_echo_ratio'])
    ratio = op_peak / echo_peak if echo_peak else 0.0
    line = (f"{report['image']}: peak op {op_peak:.1f} img/s, peak echo {echo_peak:.1f} img/s, "
            f"ratio {100 * ratio:.1f}%; best row C={best['concurrency']} {100 * best['op_to_echo_ratio']:.1f}%")
    if '1024' in report['image'] and rows[0]['op']['op'] == 'reconstruct':  # the issue's target
        line += '  TARGET(>=80%) ' + ('PASS' if ratio >= 0.8 else 'BELOW')
    print(line)
PY
fi
exit $status
