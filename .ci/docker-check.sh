#!/usr/bin/env bash
# Builds the CPU image from docker/Dockerfile on a Debian base made with debootstrap (no registry
# needed) and runs it as a user would: health from the configured port, --load-dir on a mounted
# folder, factors on a volume that outlive `docker rm`, `docker stop` draining to exit code 0, a
# non-root process, and no compiler or -dev package in the image. Needs root (dockerd).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
bash .ci/install-deps.sh --docker

tag=svdserve:cpu-check
base=svdserve-debian-base:bookworm
volume=svdserve-check-factors
port=50600  # not the default: the health check must follow the configured port
samples=/opt/svdserve/share/svdserve/samples
work="$(mktemp -d)"
containers=()
dockerd_pid=""
cleanup() {
  for c in "${containers[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  docker volume rm -f "$volume" >/dev/null 2>&1 || true
  if [ -n "$dockerd_pid" ]; then kill "$dockerd_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "docker-check: FAILED: $*" >&2; exit 1; }
# Checks a condition every second until it holds or the limit passes.
wait_until() {
  local limit=$1; shift
  local deadline=$((SECONDS + limit))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 1
  done
}

if ! docker info >/dev/null 2>&1; then
  dockerd >"$work/dockerd.log" 2>&1 &
  dockerd_pid=$!
  wait_until 60 docker info >/dev/null 2>&1 || { cat "$work/dockerd.log"; fail "dockerd did not start"; }
fi

docker volume rm -f "$volume" >/dev/null 2>&1 || true  # left by an interrupted run
bash docker/debian-base.sh "$base"
build_started=$SECONDS
docker build -q -f docker/Dockerfile --target cpu --build-arg BASE_IMAGE="$base" -t "$tag" . >/dev/null
echo "docker-check: built $tag in $((SECONDS - build_started)) s," \
  "$(($(docker image inspect -f '{{.Size}}' "$tag") / 1000000)) MB"

# What the image holds: no compiler, no -dev package, a non-root user.
in_image() { docker run --rm --entrypoint sh "$tag" -c "$1"; }
dev_packages="$(in_image 'dpkg-query -W -f "\${Package}\n" | grep -E -- "-dev$|^(gcc|g\+\+|clang|cpp|build-essential)(-[0-9.]+)?$" || true')"
[ -z "$dev_packages" ] || fail "build packages in the image: $dev_packages"
in_image 'for c in cc gcc g++ c++ clang cmake; do if command -v "$c"; then exit 1; fi; done' ||
  fail "a compiler is in the image"
[ "$(in_image 'id -u')" = 10001 ] || fail "the image does not run as uid 10001"

healthy() { [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ]; }
cli() { docker exec "$1" svdserve-cli --server "127.0.0.1:$port" "${@:2}"; }
run_server() {  # NAME [server flags...]
  containers+=("$1")
  docker run -d --name "$1" -v "$volume":/var/lib/svdserve \
    -v "$PWD/tests/data/images":/data:ro "$tag" --listen "0.0.0.0:$port" "${@:2}" >/dev/null
  wait_until 120 healthy "$1" || { docker logs "$1"; fail "$1 did not turn healthy"; }
}

# First container: loads the mounted folder, takes one more image, stops with a drain.
run_server svdserve-check-1 --load-dir /data
server_pid="$(docker inspect -f '{{.State.Pid}}' svdserve-check-1)"
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$server_pid/status")" = 10001 ] ||
  fail "the server does not run as uid 10001"
loaded="$(cli svdserve-check-1 list | grep -c -E '^(aero1|baboon|building)\.jpg ')" || true
[ "$loaded" = 3 ] || { cli svdserve-check-1 list; fail "--load-dir /data did not load the samples"; }
cli svdserve-check-1 decompose "$samples/fruits.jpg" --id kept-in-the-volume >/dev/null
cli svdserve-check-1 reconstruct kept-in-the-volume --rank 12 -o /tmp/first.png >/dev/null
docker cp svdserve-check-1:/tmp/first.png "$work/first.png"
stop_started=$SECONDS
docker stop svdserve-check-1 >/dev/null
stop_seconds=$((SECONDS - stop_started))
[ "$(docker inspect -f '{{.State.ExitCode}}' svdserve-check-1)" = 0 ] ||
  { docker logs svdserve-check-1; fail "docker stop did not exit 0"; }
grep -q "shutdown: done" <<<"$(docker logs svdserve-check-1 2>&1)" || fail "no drain in the log"
[ "$stop_seconds" -lt 10 ] || fail "docker stop took ${stop_seconds} s, its grace period is 10 s"
docker rm svdserve-check-1 >/dev/null

# A new container on the same volume, without --load-dir, serves what the first one stored.
run_server svdserve-check-2
cli svdserve-check-2 info kept-in-the-volume >/dev/null || fail "the volume lost the image"
cli svdserve-check-2 reconstruct kept-in-the-volume --rank 12 -o /tmp/second.png >/dev/null
docker cp svdserve-check-2:/tmp/second.png "$work/second.png"
cmp -s "$work/first.png" "$work/second.png" || fail "the restored image reconstructs differently"
docker stop svdserve-check-2 >/dev/null

echo "docker-check: passed in $((SECONDS - started)) s (docker stop: ${stop_seconds} s)"
