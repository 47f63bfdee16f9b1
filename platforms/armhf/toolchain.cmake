# Cross-compiling bertrt for 32-bit ARM Linux, hard-float (Debian armhf: ARMv7-A + VFPv3-D16;
# Raspberry Pi 2/3 with a 32-bit OS). Debian's armhf baseline has no NEON, so the loops stay
# scalar unless -DCMAKE_CXX_FLAGS="-mfpu=neon-vfpv4" is given for a board known to have it.
# Needs crossbuild-essential-armhf and `platforms/sysroot.sh armhf`.
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(BERTRT_TRIPLET arm-linux-gnueabihf)
set(BERTRT_DEBARCH armhf)
# GCC's note that std::vector iterators are passed differently since GCC 7.1 (-Wpsabi) only matters
# when linking against code built by GCC < 7; everything here comes from GCC 12.
set(CMAKE_C_FLAGS_INIT -Wno-psabi)
set(CMAKE_CXX_FLAGS_INIT -Wno-psabi)
set(BERTRT_RUN_SH ${CMAKE_CURRENT_LIST_DIR}/run.sh)
include(${CMAKE_CURRENT_LIST_DIR}/../cross-linux-gnu.cmake)
