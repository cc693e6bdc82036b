#!/usr/bin/env bash
# The image's runtime stage: the packages the binaries load (listed by docker/build.sh), a
# non-root user, and the folders it writes. Fails when a library of the binaries is missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# ca-certificates: the roots `svdserve-cli --tls` trusts without --ca.
xargs apt-get install -y -qq --no-install-recommends ca-certificates \
  </opt/svdserve/share/svdserve/runtime-packages.txt
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
if ldd /opt/svdserve/bin/* | grep "not found"; then exit 1; fi
useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin svdserve
# The factor repository (a volume) and where the server says which address it listens on.
install -d -o svdserve -g svdserve /var/lib/svdserve /run/svdserve
