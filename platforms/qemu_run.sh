#!/usr/bin/env bash
# Runs an ARM build of a bertrt program on this (x86-64) host under qemu-user, with the sysroot of
# platforms/sysroot.sh as the guest's root for the dynamic loader and its libraries.
# Usage: platforms/qemu_run.sh aarch64|armhf PROGRAM [ARGS...]   (the per-arch run.sh call this)
# Env: BERTRT_SYSROOT (default build-sysroot-{arm64,armhf} in the repository root);
#      OPENBLAS_NUM_THREADS (default 1: multi-threaded OpenBLAS hangs under qemu here, DESIGN.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "${1:-}" in
  aarch64) QEMU=qemu-aarch64; DEBARCH=arm64; TRIPLET=aarch64-linux-gnu; PRESET=aarch64 ;;
  armhf) QEMU=qemu-arm; DEBARCH=armhf; TRIPLET=arm-linux-gnueabihf; PRESET=armhf ;;
  *) echo "usage: $0 aarch64|armhf PROGRAM [ARGS...]" >&2; exit 2 ;;
esac
shift
[ $# -ge 1 ] || { echo "usage: run.sh PROGRAM [ARGS...]" >&2; exit 2; }
# qemu says nothing about a missing or non-ELF program: check here.
[ -f "$1" ] || { echo "run.sh: no such program: $1" >&2; exit 2; }
[ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ] || { echo "run.sh: $1 is not an ELF program (build it with: cmake --preset $PRESET)" >&2; exit 2; }
SYSROOT=${BERTRT_SYSROOT:-$ROOT/build-sysroot-$DEBARCH}
HINT="platforms/sysroot.sh $DEBARCH${BERTRT_SYSROOT:+ $BERTRT_SYSROOT}"
[ -d "$SYSROOT/lib/$TRIPLET" ] || { echo "run.sh: no sysroot at $SYSROOT (run $HINT)" >&2; exit 2; }
command -v "$QEMU" >/dev/null || { echo "run.sh: $QEMU not found (Debian package qemu-user)" >&2; exit 2; }
LIBS=$SYSROOT/lib/$TRIPLET:$SYSROOT/usr/lib/$TRIPLET:$SYSROOT/usr/lib/$TRIPLET/openblas-pthread
# -E/-U set the guest's environment only (qemu itself is an x86 program). OPENBLAS_CORETYPE, when
# the host sets one, names an x86 core (Haswell) that ARM OpenBLAS does not know: drop it.
args=(-L "$SYSROOT" -E "LD_LIBRARY_PATH=$LIBS" -E "OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}")
[ -n "${OPENBLAS_CORETYPE:-}" ] && args+=(-U OPENBLAS_CORETYPE)
exec "$QEMU" "${args[@]}" "$@"
