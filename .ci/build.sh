#!/usr/bin/env bash
# Configures and builds svdserve into ./build (Release). CI builds with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSVDSERVE_WERROR="$werror" "$@"
cmake --build build -j"$(nproc)"
