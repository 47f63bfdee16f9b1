#!/usr/bin/env bash
# The whole suite (unit tests and the CLI end-to-end checks) under AddressSanitizer +
# UndefinedBehaviorSanitizer with no recovery: any finding aborts its test (CMakePresets.json
# "asan": RelWithDebInfo, -fsanitize=address,undefined -fno-sanitize-recover=all
# -fno-omit-frame-pointer, build-asan/). Not in .ci/run yet: see README "Reliability" for its time.
# Needs the Debian packages of scripts/setup.sh (run it once first).
# Usage: scripts/test_asan.sh [ctest args...]   (e.g. -R model_file)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan > /dev/null
cmake --build --preset asan -j"$(nproc)"
ctest --preset asan -j"$(nproc)" "$@"
