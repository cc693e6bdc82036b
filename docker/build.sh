#!/usr/bin/env bash
# The image's build stage: builds the server and the client (no tests, no benchmarks), installs
# them stripped into /opt/svdserve, and lists the packages the runtime stage must install.
#   docker/build.sh [extra cmake arguments]
set -euo pipefail
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF "$@"
cmake --build build -j"$(nproc)" --target svdserve svdserve-cli svdserve_protoset
cmake --install build --prefix /opt/svdserve --strip
bash docker/runtime-packages.sh /opt/svdserve/bin/svdserve /opt/svdserve/bin/svdserve-cli \
  >/opt/svdserve/share/svdserve/runtime-packages.txt
