#!/usr/bin/env bash
# Builds a sysroot of Debian's ARM libraries for cross-compiling bertrt:
#   apt-get download PKG (arm64 or armhf) + dpkg -x, never an install.
# Installing the -dev packages through multiarch (dpkg --add-architecture + apt-get install
# PKG:arm64) replaces amd64 ones that are not co-installable (DESIGN.md, "Machine facts": it removes
# libxnnpack-dev:amd64). Here apt runs with a private configuration (own sources, lists and cache
# under DIR/.apt, APT::Architecture=ARCH), so the host's dpkg architectures, package lists and
# installed packages are never touched, and no root is needed to build the sysroot.
#
# Usage: platforms/sysroot.sh ARCH [DIR]
#   ARCH  aarch64|arm64 or armhf|arm
#   DIR   default: build-sysroot-ARCH (Debian's name) in the repository root (git-ignored /build*/)
# Idempotent: a finished sysroot (DIR/.complete naming the same package list) is left as it is.
# Env: BERTRT_DEBIAN_MIRROR (default http://deb.debian.org/debian), BERTRT_DEBIAN_SUITE (bookworm).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

case "${1:-}" in
  aarch64|arm64) ARCH=arm64; TRIPLET=aarch64-linux-gnu ;;
  armhf|arm) ARCH=armhf; TRIPLET=arm-linux-gnueabihf ;;
  "") echo "usage: $0 aarch64|armhf [DIR]" >&2; exit 2 ;;
  *) echo "sysroot.sh: unknown architecture '$1' (aarch64|arm64 or armhf|arm)" >&2
     echo "usage: $0 aarch64|armhf [DIR]" >&2; exit 2 ;;
esac
DIR=${2:-$ROOT/build-sysroot-$ARCH}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
MIRROR=${BERTRT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=${BERTRT_DEBIAN_SUITE:-bookworm}

# What bertrt links (CMakeLists.txt) and what those libraries need at run time, plus glibc and the
# C++ runtime so that qemu -L DIR finds the whole program. Header-only: nlohmann-json, CLI11.
# The cross compiler (crossbuild-essential-*) brings its own libstdc++ headers; the sysroot brings
# the C library it links against (libc6-dev, linux-libc-dev).
PKGS=(libc6 libc6-dev linux-libc-dev libcrypt1 libcrypt-dev libgcc-s1 libstdc++6
      libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev libgfortran5
      libutf8proc2 libutf8proc-dev libflatbuffers2 libflatbuffers-dev libfmt9 libfmt-dev
      libpthreadpool0 libpthreadpool-dev nlohmann-json3-dev libcli11-dev libgtest-dev
      libvulkan1 libvulkan-dev  # the Vulkan headers: the backend is built for ARM too
      libxnnpack0 libxnnpack-dev libcpuinfo0)  # the XNNPACK fully-connected provider (NEON kernels)
STAMP="$SUITE $ARCH ${PKGS[*]}"
if [ -f "$DIR/.complete" ] && [ "$(cat "$DIR/.complete")" = "$STAMP" ]; then
  echo "sysroot: $DIR is up to date"
  exit 0
fi

# --- download, with apt's state kept under DIR/.apt -----------------------------------------------
APT=$DIR/.apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/debs"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
{
  echo "deb [signed-by=$KEYRING] $MIRROR $SUITE main"
  echo "deb [signed-by=$KEYRING] $MIRROR $SUITE-updates main"
  echo "deb [signed-by=$KEYRING] ${BERTRT_DEBIAN_SECURITY:-http://deb.debian.org/debian-security} $SUITE-security main"
} > "$APT/sources.list"
: > "$APT/status"
APTOPT=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
        -o "Dir::State::Lists=$APT/lists" -o "Dir::State::status=$APT/status"
        -o "Dir::Cache=$APT/cache" -o "APT::Architecture=$ARCH" -o "APT::Architectures=$ARCH"
        -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root" -q)
echo "sysroot: apt-get update ($SUITE $ARCH)"
# An index that fails to download (a mirror in the middle of a sync, seen here on -security) is a
# warning: apt keeps the others and the download below fails if a package is then missing.
if ! apt-get "${APTOPT[@]}" update >"$APT/update.log" 2>&1; then
  sleep 5
  apt-get "${APTOPT[@]}" update >"$APT/update.log" 2>&1 ||
    { echo "sysroot: warning: apt-get update reported errors:" >&2; grep '^[EW]:' "$APT/update.log" >&2 || true; }
fi
# Files already downloaded (same name = same version) are kept; the rest are fetched.
(cd "$APT/debs" && apt-get "${APTOPT[@]}" download "${PKGS[@]}" >/dev/null)

# --- unpack ---------------------------------------------------------------------------------------
find "$DIR" -mindepth 1 -maxdepth 1 ! -name .apt -exec rm -rf {} +
for deb in "$APT"/debs/*.deb; do dpkg -x "$deb" "$DIR"; done

# Absolute symlinks (usr/lib/T/libfoo.so -> /lib/T/libfoo.so.1) point into the host: make them
# relative so the linker and qemu resolve them inside the sysroot.
find "$DIR" -path "$APT" -prune -o -type l -lname '/*' -print | while read -r link; do
  target=$(readlink "$link")
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$DIR$target")" "$link"
done

# dpkg -x runs no maintainer scripts, so the update-alternatives links of OpenBLAS (libopenblas.so,
# libblas.so.3, openblas.pc, cblas.h, ...) are missing: make them, relative, to the pthread variant
# (the one the x86 build uses).
LIB=$DIR/usr/lib/$TRIPLET INC=$DIR/usr/include/$TRIPLET
for f in "$LIB"/openblas-pthread/lib*.so* "$LIB"/openblas-pthread/lib*.a; do
  [ -e "$f" ] && ln -sfn "openblas-pthread/$(basename "$f")" "$LIB/$(basename "$f")"
done
mkdir -p "$LIB/pkgconfig"
for f in "$LIB"/openblas-pthread/pkgconfig/*.pc; do
  name=$(basename "$f"); name=${name/-openblas/}
  ln -sfn "../openblas-pthread/pkgconfig/$(basename "$f")" "$LIB/pkgconfig/$name"
done
for f in "$INC"/openblas-pthread/*.h; do
  ln -sfn "openblas-pthread/$(basename "$f")" "$INC/$(basename "$f")"
done

# Sanity: what the build needs is there.
for f in "$LIB/pkgconfig/openblas.pc" "$LIB/libopenblas.so.0" "$INC/cblas.h" "$LIB/libutf8proc.so" \
         "$LIB/libfmt.so" "$LIB/libflatbuffers.so" "$DIR/usr/include/pthreadpool.h" "$LIB/libc.so"; do
  [ -e "$f" ] || { echo "sysroot: missing $f after unpacking" >&2; exit 1; }
done
echo "$STAMP" > "$DIR/.complete"
echo "sysroot: $DIR ($(du -sh --exclude=.apt "$DIR" | cut -f1))"
