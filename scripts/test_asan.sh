#!/usr/bin/env bash
# The suite (unit tests and the CLI end-to-end checks, less the release-only runs labelled `long`:
# tests/e2e/tests.cmake) under AddressSanitizer + UndefinedBehaviorSanitizer with no recovery, the
# exhaustive sweeps sparser (BERTRT_TEST_SPARSE=1): any finding aborts its test (CMakePresets.json
# "asan": clang-14 -O2 -gline-tables-only, -fsanitize=address,undefined -fno-sanitize-recover=all
# -fno-omit-frame-pointer, build-asan/). .ci/run runs it after the release suite; its time is in
# docs/explanation/reliability.md. Needs the Debian packages of scripts/setup.sh (run it once first).
# Usage: scripts/test_asan.sh [ctest args...]   (e.g. -R model_file)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan -DBERTRT_BUILD_BENCH=OFF > /dev/null  # benchmarks: not under ASan
start=$SECONDS
cmake --build --preset asan -j"$(nproc)"
echo "test_asan.sh: built in $((SECONDS - start)) s" >&2
# Mesa's lavapipe leaves 128 bytes of its global state behind when the Vulkan loader unloads it
# at vkDestroyInstance (a dozen lines of C that create and destroy an instance show it; nothing
# leaks while the library stays loaded). LeakSanitizer runs at exit, after the loader's dlclose,
# when the block's stack names no module a suppression could match: preload the driver so it
# stays loaded. The Khronos validation layer keeps ~3 KB to the end of the process too, and
# preloading it would interpose its vk* symbols: the preset runs the Vulkan tests without it
# (BERTRT_VULKAN_VALIDATION=0; the release suite runs them under it).
icd=$(sed -n 's/.*"library_path": *"\(.*\)".*/\1/p' /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -1)
if [ -n "$icd" ] && [ -f "$icd" ]; then export LD_PRELOAD=$icd; fi
# The past-the-binding-range test runs its ops on arrays of 128 MB and more: 91 s under ASan for
# the device-memory variant and 92 s for the host one, each the slowest unit test of the stage
# (with them, CI ran past 45 minutes). Both run in the release suite; the smaller Vulkan tests run here.
# The Vulkan tests run once here, on lavapipe's host-visible memory: their device_memory/ twins
# (the staged path of discrete GPUs) run in the release suite under the validation layer.
ctest --preset asan -j"$(nproc)" -E 'Vulkan\.WholeArrayOpsRunPastTheBindingRange|^device_memory/' "$@"
