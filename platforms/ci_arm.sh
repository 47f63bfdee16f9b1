#!/usr/bin/env bash
# CI stage for ARM, run by .ci/run after the x86-64 suite (which leaves build/bertrt):
#  1. installs the cross compiler and qemu-user (idempotent), builds the arm64 sysroot (cached);
#  2. cross-builds everything with the `aarch64` preset and runs the whole unit suite under
#     qemu-aarch64 (ctest --preset aarch64: OPENBLAS_NUM_THREADS=1, BERTRT_TEST_EMULATED=1), then
#     tests/e2e/cli_test.sh on the aarch64 binary (skipped with BERTRT_ARM_CLI_TEST=0, as .ci/run does);
#  3. makes the CPack tarball and checks that it runs unpacked on a board-like root (glibc and
#     libstdc++ only), with every DT_NEEDED library either shipped or part of that base;
#     The C API examples are cross-built against the unpacked package and run there (3b);
#  4. end-to-end: tiny model, 8 pre-training steps, 8 SST-2 fine-tuning steps, eval, on aarch64
#     and on x86-64 with the same flags; losses must agree step by step (platforms/compare_runs.py).
# Usage: platforms/ci_arm.sh [X86_BUILD_DIR]   (default build; built with scripts/setup.sh if absent)
set -euo pipefail
usage() { echo "usage: platforms/ci_arm.sh [X86_BUILD_DIR]   (default build; env BERTRT_JOBS, BERTRT_ARM_CLI_TEST=0|1, BERTRT_DATA)" >&2; exit 2; }
case "${1:-}" in -*) usage ;; esac
[ $# -le 1 ] || usage
cd "$(dirname "$0")/.."
ROOT=$PWD
X86_BUILD=${1:-build}
DATA=${BERTRT_DATA:-$ROOT/../shared/data}
JOBS=${BERTRT_JOBS:-$(nproc)}  # parallel build and test jobs
START=$(date +%s)
stage() { echo "=== ci_arm [$(($(date +%s) - START)) s] $*"; }

# --- 1. tools and sysroot -------------------------------------------------------------------------
PKGS=(crossbuild-essential-arm64 qemu-user debian-archive-keyring binutils-aarch64-linux-gnu)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  stage "installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
stage "sysroot"
platforms/sysroot.sh aarch64
SYSROOT=$ROOT/build-sysroot-arm64
RUN=$ROOT/platforms/aarch64/run.sh

# --- 2. cross-build, unit suite under qemu, CLI checks --------------------------------------------
stage "configure + build (aarch64)"
cmake --preset aarch64 -DBERTRT_BUILD_BENCH=OFF >/dev/null  # CI runs no benchmark on aarch64
grep -q '^BERTRT_VULKAN:BOOL=ON' build-aarch64/CMakeCache.txt ||
  { echo "ci_arm: the aarch64 build left the Vulkan backend out (no vulkan.h in the sysroot?)"; exit 1; }
cmake --build --preset aarch64 -j"$JOBS"
stage "unit suite under qemu-aarch64"
# The sysroot has the Vulkan loader but no driver: the Vulkan tests skip here (lavapipe runs them
# on x86-64), whatever BERTRT_REQUIRE_VULKAN says for the x86-64 suite.
OPENBLAS_NUM_THREADS=1 BERTRT_REQUIRE_VULKAN=0 ctest --preset aarch64 -j"$JOBS"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# cli_test.sh runs "$BIN" itself (not through ctest's emulator): give it a launcher.
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$RUN" "$ROOT/build-aarch64/bertrt" > "$T/bertrt-aarch64"
chmod +x "$T/bertrt-aarch64"
# The CLI checks are arch-independent logic and the costliest part under qemu (~6 CPU-minutes);
# BERTRT_ARM_CLI_TEST=0 skips them (the end-to-end below still runs the CLI on aarch64).
if [ "${BERTRT_ARM_CLI_TEST:-1}" != 0 ]; then
  stage "tests/e2e/cli_test.sh under qemu-aarch64"
  bash tests/e2e/cli_test.sh "$T/bertrt-aarch64" "$DATA"
fi

# --- 3. package ------------------------------------------------------------------------------------
stage "package"
rm -f build-aarch64/bertrt-*.tar.gz
cmake --build --preset aarch64 --target package >/dev/null
TGZ=$(ls build-aarch64/bertrt-*-Linux-aarch64.tar.gz)
mkdir -p "$T/pkg" && tar -xzf "$TGZ" -C "$T/pkg"
PKG=$(ls -d "$T"/pkg/bertrt-*)
# What a stock 64-bit Debian 12 / Raspberry Pi OS board has for sure: glibc, libstdc++, libgcc_s.
BASE=$T/board-root
mkdir -p "$BASE"
for p in libc6 libstdc++6 libgcc-s1; do dpkg -x "$(ls "$SYSROOT"/.apt/debs/${p}_*_arm64.deb)" "$BASE"; done
for f in "$PKG"/bin/bertrt "$PKG"/lib/*.so*; do
  for need in $(aarch64-linux-gnu-readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if [ ! -e "$PKG/lib/$need" ] && [ ! -e "$BASE/lib/aarch64-linux-gnu/$need" ] &&
       [ ! -e "$BASE/usr/lib/aarch64-linux-gnu/$need" ]; then
      echo "package: $(basename "$f") needs $need, neither shipped nor in the base system" >&2; exit 1
    fi
  done
done
# Runs from the unpacked folder with nothing but the base root: the libraries come from RPATH.
env -u LD_LIBRARY_PATH qemu-aarch64 -L "$BASE" -E OPENBLAS_NUM_THREADS=1 -U OPENBLAS_CORETYPE \
  "$PKG/bin/bertrt" init --preset tiny --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/pkg-init.brt" >/dev/null
echo "package: $(basename "$TGZ") $(stat -c %s "$TGZ") bytes; stripped bin/bertrt $(stat -c %s "$PKG/bin/bertrt") bytes; runs unpacked on a glibc-only root"

# --- 3b. the C API examples against the unpacked package ---------------------------------------
# Cross-built with nothing but the package's include/ and lib/ (libbertrt.so), run from its bin/
# on the glibc-only root: fine-tune (3 steps) with examples/finetune_on_device.cpp, then label 8
# dev sentences with examples/classify.c and compare with the packaged `bertrt predict`.
stage "examples: cross-built against the package, run under qemu-aarch64"
xlink=(-I"$PKG/include" -L"$PKG/lib" -lbertrt -Wl,-rpath-link,"$PKG/lib" -Wl,-rpath,'$ORIGIN/../lib'
       -Wl,--disable-new-dtags)
aarch64-linux-gnu-gcc -std=c99 -O2 -Wall -Werror examples/classify.c "${xlink[@]}" -lm -o "$PKG/bin/classify"
aarch64-linux-gnu-g++ -std=c++17 -O2 -Wall -Werror examples/finetune_on_device.cpp "${xlink[@]}" \
  -o "$PKG/bin/finetune_on_device"
qarm() { env -u LD_LIBRARY_PATH qemu-aarch64 -L "$BASE" -E OPENBLAS_NUM_THREADS=1 -U OPENBLAS_CORETYPE "$@"; }
head -n 49 "$DATA/glue/SST-2/train.tsv" > "$T/ex-train.tsv"   # header + 48 examples: 3 steps of 16
head -n 17 "$DATA/glue/SST-2/dev.tsv" > "$T/ex-dev.tsv"
tail -n +2 "$T/ex-dev.tsv" | head -8 | cut -f1 > "$T/ex-lines.txt"
qarm "$PKG/bin/finetune_on_device" "$T/pkg-init.brt" sst2 "$T/ex-train.tsv" "$T/ex-dev.tsv" "$T/ex-sst2.brt" 1 32 \
  > "$T/ex-ft.log" 2>&1 || { echo "finetune_on_device failed on aarch64:" >&2; tail -5 "$T/ex-ft.log" >&2; exit 1; }
grep -q '^step 3/3 ' "$T/ex-ft.log" || { echo "finetune_on_device: no step 3/3 line" >&2; cat "$T/ex-ft.log" >&2; exit 1; }
qarm "$PKG/bin/classify" "$T/ex-sst2.brt" 32 < "$T/ex-lines.txt" > "$T/ex-classify.out"
qarm "$PKG/bin/bertrt" predict --model "$T/ex-sst2.brt" < "$T/ex-lines.txt" > "$T/ex-predict.out"
cmp -s "$T/ex-classify.out" "$T/ex-predict.out" ||
  { echo "classify (C API) and bertrt predict differ on aarch64:" >&2; diff "$T/ex-classify.out" "$T/ex-predict.out" >&2; exit 1; }
echo "examples: finetune_on_device + classify on aarch64 from the package, $(wc -l < "$T/ex-classify.out") lines as bertrt predict"

# --- 4. end-to-end, aarch64 vs x86-64 --------------------------------------------------------------
# Sized for qemu (≈50x slower than the x86-64 run here): short sequences keep the MLM output GEMM
# (masked positions x 30522) small; AdamW over the 4.4 M parameters is paid every step regardless.
if [ ! -x "$X86_BUILD/bertrt" ]; then
  stage "x86-64 build ($X86_BUILD/bertrt missing)"
  scripts/setup.sh "$X86_BUILD"
fi
stage "end-to-end: aarch64 and x86-64, same flags"
head -c 300000 "$DATA/corpus/enwiki/enwiki_valid_1000docs.txt" > "$T/corpus.txt"
head -n 301 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"   # header + 300 examples
head -n 101 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"       # header + 100 examples
logged() {  # logged LOG CMD...: output to LOG, shown when CMD fails
  local log=$1; shift
  "$@" >"$log" 2>&1 || { echo "FAILED: $*" >&2; tail -20 "$log" >&2; exit 1; }
}
e2e() {  # e2e NAME BERTRT...
  local d=$T/$1; shift
  mkdir -p "$d"
  logged "$d/init.log" "$@" init --preset tiny --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" --seed 7 -o "$d/init.brt"
  logged "$d/pretrain.log" "$@" pretrain --model "$d/init.brt" --corpus "$T/corpus.txt" --max-steps 8 --batch-size 4 \
    --max-seq-length 32 --learning-rate 1e-3 --seed 11 --metrics "$d/pretrain.jsonl" -o "$d/pt.brt"
  logged "$d/finetune.log" "$@" finetune --model "$d/pt.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" \
    --max-steps 8 --batch-size 8 --max-seq-length 32 --learning-rate 1e-4 --seed 5 \
    --metrics "$d/finetune.jsonl" -o "$d/sst2.brt"
  "$@" eval --model "$d/sst2.brt" --task sst2 --data "$T/dev.tsv" --json > "$d/eval.json"
}
t0=$(date +%s); e2e aarch64 "$T/bertrt-aarch64"; t_arm=$(($(date +%s) - t0))
t0=$(date +%s); e2e x86_64 "$X86_BUILD/bertrt"; t_x86=$(($(date +%s) - t0))
echo "end-to-end wall time: aarch64 under qemu ${t_arm} s, x86-64 ${t_x86} s"
cmp -s "$T/aarch64/init.brt" "$T/x86_64/init.brt" && echo "init: byte-identical on both" \
  || { echo "init.brt differs between aarch64 and x86-64 (seeded init must not depend on the CPU)" >&2; exit 1; }
/usr/bin/python3 platforms/compare_runs.py "$T/aarch64" "$T/x86_64"
# --- 5. the tutorial's commands, the board steps under qemu-aarch64 ---------------------------------
stage "docs/tutorial.md, host and board steps"
/usr/bin/python3 tests/docs/doc_commands.py --source "$ROOT" --build "$X86_BUILD" \
  --shared "$(dirname "$DATA")" --stage arm docs/tutorial.md
stage "done"
