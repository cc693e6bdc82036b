#!/usr/bin/env bash
# Installs everything svdserve needs to build and test, from Debian/Ubuntu packages.
# One list, used by the README's commands, by CI and by docker/Dockerfile (which installs only
# the libraries and compilers: --build).
set -euo pipefail

# What the server and client link against (their -dev packages pull in the shared libraries;
# names of the bare library packages differ between Debian 12 and Ubuntu 24.04, these do not).
libraries=(
  libgrpc++-dev libgrpc-dev libprotobuf-dev libssl-dev
  libopencv-dev libspdlog-dev libfmt-dev
  liblapacke-dev libopenblas-dev
  prometheus-cpp-dev
  libhiredis-dev  # the Redis factor repository (its archive links into the portable build)
)
# What compiles the server and the client.
compilers=(build-essential cmake pkg-config protobuf-compiler-grpc protobuf-compiler)
# Only needed to test, and for the portable bundle.
test_tools=(
  git ca-certificates zstd
  libgtest-dev libgmock-dev
  openssl  # the TLS tests make their certificates with it
  redis-server nginx-light  # servers the tests start
  # promtool checks deploy/prometheus; a real Prometheus runs the rules and dashboard queries.
  # Where systemd runs, Debian also starts it as a service (systemctl disable --now prometheus).
  prometheus
  # Codecs the static OpenCV of the portable build links against.
  libpng-dev libjpeg-dev libwebp-dev libtiff-dev zlib1g-dev liblzma-dev libjbig-dev libdeflate-dev libzstd-dev
)

# Only for .ci/docker-check.sh: a Docker engine and what builds the image's Debian base.
docker_tools=(docker.io debootstrap)

# --build: enough to build svdserve and svdserve-cli (the Docker image's build stage; its runtime
# stage takes the packages the built binaries link, docker/runtime-packages.sh). --fuzz: also
# Clang and its libFuzzer runtime (.ci/fuzz.sh); Debian names that package after Clang's version.
# --docker: docker_tools only.
case "${1:-}" in
  --build) packages=("${libraries[@]}" "${compilers[@]}") ;;
  --docker) packages=("${docker_tools[@]}") ;;
  --fuzz)
    packages=("${libraries[@]}" "${compilers[@]}" "${test_tools[@]}" clang)
    if command -v clang >/dev/null; then
      packages+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
    fi ;;
  *) packages=("${libraries[@]}" "${compilers[@]}" "${test_tools[@]}") ;;
esac

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The libFuzzer runtime's name is known only once Clang is there.
if [ "${1:-}" = "--fuzz" ] && ! dpkg-query -W "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev" >/dev/null 2>&1; then
  exec "$0" --fuzz
fi
