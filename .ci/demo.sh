#!/usr/bin/env bash
# The README's first command: installs what is needed, builds, starts the server (CPU backend
# when there is no GPU), sends the bundled sample images and writes their reconstructions at a
# few ranks into ./demo-output. The server is stopped (SIGTERM, graceful drain) at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps.sh
bash .ci/build.sh

port="${SVDSERVE_PORT:-50051}"
out="${SVDSERVE_DEMO_OUT:-demo-output}"
server=build/server/svdserve
cli=(build/client/svdserve-cli --server "127.0.0.1:$port")

"$server" --config config/svdserve.textproto --listen "127.0.0.1:$port" &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do
  if "${cli[@]}" --timeout 1 health >/dev/null 2>&1; then break; fi
  if ! kill -0 $server_pid 2>/dev/null; then echo "demo: the server exited" >&2; exit 1; fi
  sleep 0.2
done
"${cli[@]}" server-info
"${cli[@]}" run tests/data/images --rank 5,20,80 -o "$out"
"${cli[@]}" stats
echo
echo "demo: reconstructions written to $out/ (<image>_k<rank>.png)"
ls "$out"
