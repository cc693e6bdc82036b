#!/usr/bin/env bash
# Installs everything svdserve needs to build and test, from Debian/Ubuntu packages.
# One list, used by the README's commands, by CI and by docker/Dockerfile.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git ca-certificates zstd
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libopencv-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev
  liblapacke-dev libopenblas-dev
  # Codecs the static OpenCV of the portable build links against.
  libpng-dev libjpeg-dev libwebp-dev libtiff-dev zlib1g-dev liblzma-dev libjbig-dev libdeflate-dev libzstd-dev
)

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
