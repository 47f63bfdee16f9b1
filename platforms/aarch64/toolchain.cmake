# Cross-compiling bertrt for 64-bit ARM Linux (Raspberry Pi 4/5 with a 64-bit OS, Debian arm64
# boards, Jetson): `cmake --preset aarch64` (CMakePresets.json) or
#   platforms/sysroot.sh aarch64 && cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=platforms/aarch64/toolchain.cmake
# The code is built for the ARMv8.0-A baseline, which includes NEON (Advanced SIMD): the cpu
# backend's loops are vectorised with it at -O2/-O3 and run on every aarch64 board (Pi 4 is a
# Cortex-A72). Add e.g. -DCMAKE_CXX_FLAGS=-mcpu=cortex-a76 to tune for one board (Pi 5).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(BERTRT_TRIPLET aarch64-linux-gnu)
set(BERTRT_DEBARCH arm64)
set(BERTRT_RUN_SH ${CMAKE_CURRENT_LIST_DIR}/run.sh)
include(${CMAKE_CURRENT_LIST_DIR}/../cross-linux-gnu.cmake)
