#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (Clang, ASan + UBSan) and runs each for SECONDS from
# seeds made of real inputs (tests/fuzz/make_seeds.py) plus every input that once failed
# (tests/fuzz/regressions/TARGET/). A crash, sanitizer report, leak, or an input slower than
# 10 s or above 2 GiB fails the run; the input is kept in build-fuzz/findings/ to be added to
# the regressions. Usage: .ci/fuzz.sh [SECONDS per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(image_decode raw_image config requests)

bash .ci/install-deps.sh --fuzz
cmake --preset fuzz >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/svdserve_fuzz_}"

seeds=build-fuzz/seeds
rm -rf "$seeds" && python3 tests/fuzz/make_seeds.py "$seeds"
mkdir -p build-fuzz/findings
export SVDSERVE_TEST_IMAGES="${SVDSERVE_TEST_IMAGES:-$PWD/tests/data/images}"
status=0
for target in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$target"   # grows across local runs; CI starts from the seeds
  mkdir -p "$corpus"
  inputs=("$corpus" "$seeds/$target")
  [ -d "tests/fuzz/regressions/$target" ] && inputs+=("tests/fuzz/regressions/$target")
  echo "== fuzz $target for ${seconds} s"
  if ! "build-fuzz/tests/fuzz/svdserve_fuzz_$target" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$target-" \
      "${inputs[@]}" 2>&1 | tail -n 25; then
    echo "fuzz: $target FAILED; the input is in build-fuzz/findings/"
    status=1
  fi
done
exit "$status"
