#!/usr/bin/env bash
# Builds a minimal Debian 12 base image from Debian's archive with debootstrap and imports it
# into the local Docker engine, for hosts that reach Debian's mirror but no image registry.
#   docker/debian-base.sh [TAG]   (default svdserve-debian-base:bookworm; needs root)
# Then: docker build -f docker/Dockerfile --target cpu --build-arg BASE_IMAGE=TAG -t svdserve:cpu .
set -euo pipefail
tag="${1:-svdserve-debian-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
chmod 755 "$rootfs"  # it becomes the image's /, which the non-root user must traverse
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/dev/null
# What Debian's own images do: security updates, no package lists or caches in the layer.
cat >"$rootfs/etc/apt/sources.list" <<LIST
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
LIST
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
tar -C "$rootfs" -c . | docker import --change 'CMD ["bash"]' - "$tag" >/dev/null
echo "$tag"
