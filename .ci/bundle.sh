#!/usr/bin/env bash
# Builds the portable bundle: bundle/svdserve/ (bin/, lib/, config/, share/, tests/data/) and
# bundle/svdserve.tar.zst, for a GPU host that has glibc, the NVIDIA driver and CUDA 13's
# cuBLAS/cuSOLVER but none of the build's other libraries (cmake/Portable.cmake says how).
# Usage: .ci/bundle.sh [extra cmake configure arguments, e.g. -DOpenCV_DIR=...]
set -euo pipefail
cd "$(dirname "$0")/.."

jobs="${JOBS:-2}"
prefix=bundle/svdserve
archive=bundle/svdserve.tar.zst
max_archive_mib=60

cmake --preset portable "$@"
cmake --build build-portable -j"$jobs"
rm -rf "$prefix" "$archive"
cmake --install build-portable --prefix "$prefix"

# Only ELF files: lib/ keeps its symlinks, strip follows them to the one real file.
while IFS= read -r -d '' file; do
  if [ "$(head -c4 "$file" | tr -d '\0')" = $'\x7fELF' ]; then
    strip --strip-unneeded "$file"
  fi
done < <(find "$prefix/bin" "$prefix/lib" -type f -print0 2>/dev/null)

# A 128 MiB window (--long=27, the most a plain `zstd -d`/`tar --zstd` decodes without flags)
# lets the copies of gRPC, OpenBLAS and OpenCV in every test binary compress against each other.
tar -C bundle -cf - svdserve | zstd -q -19 --long=27 -T"$jobs" -o "$archive"
# The GPU machine has tar and xz but no zstd: an xz copy for the device tool to carry.
zstd -dc --long=27 "$archive" | xz -9 -T"$jobs" > bundle/svdserve.tar.xz
bytes=$(stat -c %s "$archive")
echo "bundle: $archive $((bytes / 1024 / 1024)) MiB ($bytes bytes); unpacked $(du -sh "$prefix" | cut -f1)"
du -ah "$prefix/bin" "$prefix/lib" 2>/dev/null | sort -rh | head -12

# Every binary must need only glibc, CUDA's libraries and what lib/ ships.
allowed='^(linux-vdso|ld-linux|lib(c|m|dl|rt|pthread|util|resolv|stdc\+\+|gcc_s)\.so|libcuda\.so|libcu(blas|blasLt|solver|sparse)\.so|libnvJitLink\.so)'
status=0
for binary in "$prefix"/bin/*; do
  echo "== ldd $binary"
  ldd "$binary" | sed 's/^/   /'
  for needed in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if ! [[ "$needed" =~ $allowed ]] && [ ! -e "$prefix/lib/$needed" ]; then
      echo "bundle: $binary needs $needed, which is neither a system/CUDA library nor in lib/" >&2
      status=1
    fi
  done
done
if [ "$bytes" -ge $((max_archive_mib * 1024 * 1024)) ]; then
  echo "bundle: $archive is over $max_archive_mib MiB" >&2
  status=1
fi
exit "$status"
