#!/usr/bin/env bash
# Replicas behind nginx: Reconstruct images/s through Debian's nginx with the shipped
# deploy/nginx/svdserve.conf in front of 1, 2 and 3 servers sharing one data folder, against the
# same load sent straight to one server in the same run (the ratio says what nginx costs and what
# more replicas give). The load is `svdserve-cli bench --op reconstruct --ids 64`: 64 ids of one
# photo, caller c asking for id c % 64, so the id hash spreads them over the replicas.
#
# Usage: bench/replicas_bench.sh [BIN_DIR (build)] [OUT_DIR (replicas-bench-out)]
#   BIN_DIR holds server/svdserve and client/svdserve-cli, or bin/svdserve and bin/svdserve-cli.
# Env: NGINX_BINARY (nginx; not NGINX, which nginx reads as inherited sockets), REPLICAS_BACKEND (auto), REPLICAS_BUDGET_MIB per server (4096),
# REPLICAS_IMAGE (tests/data/images/baboon.jpg), REPLICAS_RANK (32), REPLICAS_CONCURRENCY (64),
# REPLICAS_DURATION seconds (10), SVDSERVE_PORT (first port, 50071).
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-build}"
out="${2:-replicas-bench-out}"
server="$bin/server/svdserve"; [ -x "$server" ] || server="$bin/bin/svdserve"
cli="$bin/client/svdserve-cli"; [ -x "$cli" ] || cli="$bin/bin/svdserve-cli"
nginx="${NGINX_BINARY:-nginx}"
backend="${REPLICAS_BACKEND:-auto}"
budget="${REPLICAS_BUDGET_MIB:-4096}"
image="${REPLICAS_IMAGE:-tests/data/images/baboon.jpg}"
rank="${REPLICAS_RANK:-32}"
concurrency="${REPLICAS_CONCURRENCY:-64}"
duration="${REPLICAS_DURATION:-10}"
port="${SVDSERVE_PORT:-50071}"
lb_port=$((port + 10))
mkdir -p "$out"
out="$(cd "$out" && pwd)"
data="$out/data"

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT
wait_ready() {  # address
  for _ in $(seq 1 300); do
    if "$cli" --server "$1" --timeout 1 health >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "replicas_bench: $1 did not become ready" >&2
  exit 1
}
start_replicas() {  # count
  rm -rf "$data"
  for i in $(seq 0 $(($1 - 1))); do
    "$server" --listen "127.0.0.1:$((port + i))" --backend "$backend" --log-level warn \
      --memory-budget-mib "$budget" --data-dir "$data" --durability sync &
    pids+=($!)
  done
  for i in $(seq 0 $(($1 - 1))); do wait_ready "127.0.0.1:$((port + i))"; done
}
start_nginx() {  # count: the shipped file, its ports replaced by ours
  local dir="$out/nginx"
  rm -rf "$dir" && mkdir -p "$dir"
  { sed -n '/^upstream svdserve {/q;p' deploy/nginx/svdserve.conf
    echo "upstream svdserve {"
    sed -n '/^upstream svdserve {/,/^}/p' deploy/nginx/svdserve.conf | grep -v "^upstream\|server 127\|^}"
    for i in $(seq 0 $(($1 - 1))); do
      echo "    server 127.0.0.1:$((port + i)) max_fails=1 fail_timeout=5s;"
    done
    echo "}"
    sed -n '/^server {/,$p' deploy/nginx/svdserve.conf | sed "s/listen 50051 http2;/listen $lb_port http2;/"
  } > "$dir/svdserve.conf"
  cat > "$dir/nginx.conf" <<CONF
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/client_body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  include $dir/svdserve.conf;
}
CONF
  "$nginx" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' &
  pids+=($!)
  wait_ready "127.0.0.1:$lb_port"
}
bench() {  # name address
  echo "== $1"
  "$cli" --server "$2" bench --op reconstruct --image "$image" --ids 64 --rank "$rank" \
    --concurrency "$concurrency" --duration "$duration" --warmup 256 --json "$out/$1.json"
}

start_replicas 1
bench direct_1 "127.0.0.1:$port"
stop_all
for count in 1 2 3; do
  start_replicas "$count"
  start_nginx "$count"
  bench "nginx_$count" "127.0.0.1:$lb_port"
  stop_all
done

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
direct = json.load(open(f"{out}/direct_1.json"))
base = direct["images_per_second"]
print()
print(f"{'route':<22} {'images/s':>10} {'p50 ms':>8} {'p99 ms':>8}  to one server direct")
for name in ("direct_1", "nginx_1", "nginx_2", "nginx_3"):
    row = json.load(open(f"{out}/{name}.json"))
    errors = sum(row["errors"].values())
    label = "direct, 1 server" if name == "direct_1" else f"nginx, {name[-1]} server(s)"
    print(f"{label:<22} {row['images_per_second']:>10.1f} {row['latency_ms']['p50']:>8.2f} "
          f"{row['latency_ms']['p99']:>8.2f}  {row['images_per_second'] / base:.2f}"
          + (f", {errors} failed" if errors else ""))
PY
