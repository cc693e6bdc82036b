#!/usr/bin/env bash
# The CPU suites under sanitizers, building only what they run: AddressSanitizer + UBSan over the
# kernels and server tests (the CPU backend, decoding, the pipeline, the gRPC layer, config), and
# ThreadSanitizer over the server tests (the pipeline's threads, batcher, queues, stream budget).
# gRPC, OpenCV and OpenBLAS are Debian's uninstrumented builds: TSan sees our synchronisation,
# not theirs. Usage: .ci/sanitizers.sh [asan|tsan ...] (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
export SVDSERVE_TEST_IMAGES="${SVDSERVE_TEST_IMAGES:-$PWD/tests/data/images}"
kinds=("$@")
[ "${#kinds[@]}" -eq 0 ] && kinds=(asan tsan)

for kind in "${kinds[@]}"; do
  case "$kind" in
    asan) binaries=(svdserve_kernels_tests svdserve_server_tests); labels='kernels|server' ;;
    tsan) binaries=(svdserve_server_tests); labels='server' ;;
    *) echo "sanitizers: unknown kind $kind (asan or tsan)" >&2; exit 2 ;;
  esac
  echo "== $kind: ${binaries[*]}"
  cmake --preset "$kind" >/dev/null
  cmake --build "build-$kind" -j"$jobs" --target "${binaries[@]}"
  ctest --preset "$kind" -j"$jobs" -L "$labels" -E '_layering'
done
