#!/usr/bin/env bash
# Prints the packages that own the shared libraries the given binaries load: the runtime image
# installs exactly these, so it carries no -dev package and one list serves Debian and Ubuntu.
#   docker/runtime-packages.sh /opt/svdserve/bin/svdserve /opt/svdserve/bin/svdserve-cli
set -euo pipefail
owner() {  # dpkg knows a library by the path its package installed, which may be a symlink's
  dpkg -S "$1" 2>/dev/null || dpkg -S "$(readlink -f "$1")" 2>/dev/null ||
    dpkg -S "${1/#\/usr\/lib\//\/lib\/}" 2>/dev/null || true
}
for binary in "$@"; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r library; do
  found="$(owner "$library")"
  # A library no package owns (a toolkit installed by hand) must already be in the runtime base:
  # the image's build checks that ldd finds every library.
  if [ -n "$found" ]; then echo "${found%%:*}"; else echo "runtime-packages: no package owns $library" >&2; fi
done | sort -u
