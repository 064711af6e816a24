#!/usr/bin/env bash
# Builds `muster` and `kubelet-emulator` and copies them, with every shared library they load
# except glibc's, into a folder that runs on a machine without muster's build dependencies (the
# GPU machine: an Ubuntu 24.04 CUDA image with the driver but no Boost, gRPC or SQLite):
#
#   scripts/gpu-bundle.sh [BUILD_DIR [BUNDLE_DIR]]     # defaults: build/release, build/gpu-bundle
#   # there: scripts/gpu-check.sh --bundle build/gpu-bundle
#
# BUNDLE_DIR/bin holds the stripped binaries, BUNDLE_DIR/lib the libraries (gpu-check.sh puts it
# on LD_LIBRARY_PATH). glibc itself (libc, libm, ld-linux, ...) is left out: the target's is
# newer and backward compatible. libnvidia-ml is never bundled: the driver's is the one to use.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
bundle=${2:-$root/build/gpu-bundle}
cd "$root"

if [ ! -f "$build/build.ninja" ]; then
  cmake --preset release -B "$build"
fi
cmake --build "$build" --target muster kubelet-emulator -j2

binaries=("$build/src/cmd/muster" "$build/src/deviceplugin/kubelet-emulator")
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for binary in "${binaries[@]}"; do
  strip --strip-unneeded -o "$bundle/bin/$(basename "$binary")" "$binary"
done

is_glibc() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | \
      libdl.so.* | librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libnsl.so.* | \
      libBrokenLocale.so.* | libnss_*.so.* | libnvidia-ml.so.*)
      return 0 ;;
  esac
  return 1
}

for binary in "${binaries[@]}"; do
  # "libfoo.so.1 => /usr/lib/x86_64-linux-gnu/libfoo.so.1 (0x...)"
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    is_glibc "$name" && continue
    if [ ! -f "$path" ]; then
      echo "gpu-bundle: $binary needs $name, which the loader cannot find" >&2
      exit 1
    fi
    [ -f "$bundle/lib/$name" ] || cp -L "$path" "$bundle/lib/$name"
  done < <(ldd "$binary")
done
strip --strip-unneeded "$bundle"/lib/*.so* 2>/dev/null || true

# The bundle must run with only its own libraries and glibc.
for binary in "$bundle"/bin/*; do
  if LD_LIBRARY_PATH="$bundle/lib" ldd "$binary" | grep -q "not found"; then
    echo "gpu-bundle: $binary has unresolved libraries:" >&2
    LD_LIBRARY_PATH="$bundle/lib" ldd "$binary" | grep "not found" >&2
    exit 1
  fi
done
LD_LIBRARY_PATH="$bundle/lib" "$bundle/bin/muster" --version >/dev/null
echo "gpu-bundle: $bundle ($(du -sh "$bundle" | cut -f1)): $(ls "$bundle/bin" | tr '\n' ' ')+ $(ls "$bundle/lib" | wc -l) libraries"
