#!/usr/bin/env bash
# The README's test command: installs what is needed, builds, and runs the whole test suite.
# GPU tests (CTest label "gpu") skip themselves when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps.sh
bash .ci/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
