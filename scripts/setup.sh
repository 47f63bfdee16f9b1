#!/usr/bin/env bash
# Installs the Debian packages bertrt needs (idempotent; needs root or sudo), then configures and
# builds.
#   scripts/setup.sh [build-dir]             everything: the runtime, the tests and the benchmarks
#   scripts/setup.sh --runtime [build-dir]   the library, `bertrt`, `bertrt-convert`, the C API and
#                                            the Python module only (no test or benchmark packages)
# (default build-dir: build). docs/how-to/build.md explains each package.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNTIME_ONLY=0
if [ "${1:-}" = --runtime ]; then RUNTIME_ONLY=1; shift; fi
case "${1:-}" in -*) echo "usage: scripts/setup.sh [--runtime] [build-dir]" >&2; exit 2 ;; esac

# To build and run bertrt. (libvulkan-dev and glslc build the Vulkan backend; the binary opens the
# Vulkan loader at run time, so a machine without a GPU driver still runs it on the CPU.
# libcpp-httplib-dev is the HTTP server of `bertrt serve`.)
RUNTIME=(cmake g++ make pkg-config libopenblas-dev libpthreadpool-dev libxnnpack-dev
         libflatbuffers-dev flatbuffers-compiler libutf8proc-dev nlohmann-json3-dev libcli11-dev
         libfmt-dev libzip-dev libsnappy-dev libvulkan-dev glslc libcpp-httplib-dev python3
         python3-numpy)
# To test and benchmark it: GoogleTest; PyTorch, the reference the tests compare against; lavapipe
# (a CPU Vulkan device) and the Khronos validation layer; pytest for the Python module; ONNX to
# build the ONNX Runtime peers' graphs (benchmarks); GNU time for peak-RSS figures; clang-14 with
# libFuzzer for the fuzz targets (scripts/fuzz.sh); lld, which links the test executables faster;
# python3-requests and curl, the HTTP clients of the server's end-to-end test and docs; wrk, the
# server's load generator (bench/serve_load.py).
TESTS=(libgtest-dev python3-torch mesa-vulkan-drivers vulkan-validationlayers python3-pytest
       python3-onnx time clang-14 libclang-rt-14-dev lld python3-requests curl wrk)
PKGS=("${RUNTIME[@]}")
((RUNTIME_ONLY)) || PKGS+=("${TESTS[@]}")
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
BUILD=${1:-build}
if ((RUNTIME_ONLY)); then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBERTRT_BUILD_TESTS=OFF -DBERTRT_BUILD_BENCH=OFF >/dev/null
else
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBERTRT_BUILD_TESTS=ON -DBERTRT_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)"
