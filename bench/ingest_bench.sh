#!/usr/bin/env bash
# Benchmark 6, photo ingest over gRPC: Decompose (max rank 64) and Compress (rank 32) of one JPEG
# or PNG photo sent back to back by `svdserve-cli bench` at concurrency C, for 1024², 2048² and
# 1920x1080 JPEGs and a 1024² PNG, beside the randomized SVD's own rate (svdserve_rsvd_bench,
# 1024², rank 64) measured in the same run: three channels of a 1024² RGB photo are three
# matrices, so the SVD bounds ingest at rsvd matrices/s ÷ 3. Starts its own server (GPU backend
# when there is one), twice: JPEGs decoded by nvJPEG (--gpu-jpeg nvjpeg), then by OpenCV on the
# loader threads (--gpu-jpeg off), the CPU-decode baseline of the same run. The inputs are made by the server from the sample photo: reconstructed at
# full rank, resized (bench/resize_ppm.py), compressed at full rank into JPEG (quality 90) and PNG.
#
# Usage: bench/ingest_bench.sh [BUILD_DIR (build)] [OUT_DIR (ingest-bench-out)]
# Env: INGEST_CONCURRENCY (16), INGEST_DURATION seconds per run (5), INGEST_WARMUP (64),
# INGEST_BACKEND (auto), SVDSERVE_PORT (50062), INGEST_RSVD_BENCH (path of svdserve_rsvd_bench;
# default BUILD_DIR/bench/svdserve_rsvd_bench, skipped when missing), SVDSERVE_TEST_IMAGES.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
out="${2:-ingest-bench-out}"
concurrency="${INGEST_CONCURRENCY:-16}"
duration="${INGEST_DURATION:-5}"
warmup="${INGEST_WARMUP:-64}"
backend="${INGEST_BACKEND:-auto}"
port="${SVDSERVE_PORT:-50062}"
images_dir="${SVDSERVE_TEST_IMAGES:-tests/data/images}"
rsvd_bench="${INGEST_RSVD_BENCH:-$build/bench/svdserve_rsvd_bench}"
cli=("$build/client/svdserve-cli" --server "127.0.0.1:$port")
mkdir -p "$out"

server_pid=""
start_server() {  # extra server flags...
  "$build/server/svdserve" --config config/svdserve.textproto --listen "127.0.0.1:$port" \
    --backend "$backend" --log-level warn "$@" &
  server_pid=$!
  for _ in $(seq 1 150); do
    if "${cli[@]}" --timeout 1 health >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$server_pid" 2>/dev/null; then echo "ingest_bench: the server exited" >&2; exit 1; fi
    sleep 0.2
  done
  echo "ingest_bench: the server did not become ready" >&2
  exit 1
}
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}
trap stop_server EXIT
start_server --gpu-jpeg nvjpeg
"${cli[@]}" server-info | tee "$out/server-info.txt"

# The 868x600 sample at full rank as PPM, resized, then encoded by the server.
"${cli[@]}" decompose "$images_dir/building.jpg" --id ingest-source --max-rank 600 >/dev/null
"${cli[@]}" reconstruct ingest-source --rank 600 -o "$out/source.ppm" >/dev/null
"${cli[@]}" delete ingest-source >/dev/null
inputs=()
for size in 1024x1024 2048x2048 1920x1080; do
  python3 bench/resize_ppm.py "$out/source.ppm" "$out/photo$size.ppm" "$size"
  "${cli[@]}" compress "$out/photo$size.ppm" --rank 600 --format jpeg -o "$out/photo$size.jpg" >/dev/null
  inputs+=("$out/photo$size.jpg")
done
"${cli[@]}" compress "$out/photo1024x1024.ppm" --rank 600 --format png -o "$out/photo1024x1024.png" >/dev/null
inputs+=("$out/photo1024x1024.png")

status=0
for decoder in nvjpeg off; do
  if [ "$decoder" = off ]; then stop_server; start_server --gpu-jpeg off; fi
  for input in "${inputs[@]}"; do
    name="$(basename "$input")"
    case "$name" in *.png) [ "$decoder" = off ] && continue ;; esac  # PNG: OpenCV either way
    for op in decompose compress; do
      echo; echo "== $op $name, JPEG decoder $decoder"
      "${cli[@]}" bench --op "$op" --image "$input" --max-rank 64 --rank 32 \
        --concurrency "$concurrency" --duration "$duration" --warmup "$warmup" \
        --json "$out/ingest_${decoder}_${op}_${name}.json" || status=$?
    done
  done
done
stop_server

rsvd_rate=""
if [ -x "$rsvd_bench" ]; then
  echo; echo "== $rsvd_bench"
  if "$rsvd_bench" --images "$images_dir" --json "$out/rsvd.json" | tee "$out/rsvd.txt" &&
     [ -s "$out/rsvd.json" ]; then
    rsvd_rate="$out/rsvd.json"
  fi
fi

python3 - "$rsvd_rate" "$out"/ingest_*.json <<'PY'
import json, sys
rsvd_path, reports = sys.argv[1], sys.argv[2:]
bound = None
if rsvd_path:
    for result in json.load(open(rsvd_path))['rows']:
        if result['side'] == 1024 and bound is None:
            bound = result['matrices_per_s'] / 3  # three channels per RGB photo
print()
print(f"{'input':<22} {'op':<10} {'decoder':<8} {'images/s':>10} {'p50 ms':>8}  "
      "to the rSVD bound / to OpenCV decode")
if bound:
    print(f"{'(rSVD 1024², rank 64)':<22} {'':<10} {'':<8} {bound:>10.1f}")
rates = {}
rows = []
for path in reports:
    row = json.load(open(path))
    decoder = path.split('/')[-1].split('_')[1]
    name = row['image'].split('/')[-1]
    rates[(name, row['op'], decoder)] = row['images_per_second']
    rows.append((name, row['op'], decoder, row))
for name, op, decoder, row in sorted(rows, key=lambda r: (r[0], r[1], r[2] != 'nvjpeg')):
    notes = []
    if bound and '1024x1024' in name:
        notes.append(f"{100 * row['images_per_second'] / bound:.1f} % of rSVD")
    baseline = rates.get((name, op, 'off'))
    if decoder == 'nvjpeg' and baseline:
        notes.append(f"{row['images_per_second'] / baseline:.2f}x OpenCV")
    errors = sum(row['errors'].values())
    if errors:
        notes.append(f"{errors} failed")
    print(f"{name:<22} {op:<10} {decoder:<8} {row['images_per_second']:>10.1f} "
          f"{row['latency_ms']['p50']:>8.2f}  " + ', '.join(notes))
PY
exit $status
