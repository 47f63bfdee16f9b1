#!/usr/bin/env bash
# Installs the Debian packages bertrt needs (idempotent; needs root or sudo) and configures + builds.
# Usage: scripts/setup.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(cmake g++ make pkg-config libopenblas-dev libpthreadpool-dev libflatbuffers-dev flatbuffers-compiler
      libutf8proc-dev nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev python3-torch
      libzip-dev libsnappy-dev time
      libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers
      python3-pytest  # the Python module's tests (python/tests, ctest python_api)
      python3-onnx
      libxnnpack-dev)  # the XNNPACK fully-connected provider (backends/cpu/xnnpack_fc.h)
# (The Vulkan backend: headers and glslc to build; lavapipe, a CPU Vulkan device, and the Khronos
# validation layer for its tests. The binary opens the loader at run time, so boards need none.)
# (python3-onnx: bench/side_by_side.sh builds the ONNX Runtime peers' graphs; benchmarks only.)
# libFuzzer (clang-14, libclang-rt-14-dev) for the fuzz targets (scripts/fuzz.sh).
PKGS+=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
BUILD=${1:-build}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
