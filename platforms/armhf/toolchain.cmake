# Cross-compiling bertrt for 32-bit ARM Linux, hard-float (Debian armhf: ARMv7-A + VFPv3-D16;
# Raspberry Pi 2/3 with a 32-bit OS). Debian's armhf baseline has no NEON, so the loops stay
# scalar unless -DCMAKE_CXX_FLAGS="-mfpu=neon-vfpv4" is given for a board known to have it.
# Needs crossbuild-essential-armhf and `platforms/sysroot.sh armhf`.
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(BERTRT_TRIPLET arm-linux-gnueabihf)
set(BERTRT_DEBARCH armhf)
set(BERTRT_RUN_SH ${CMAKE_CURRENT_LIST_DIR}/run.sh)
include(${CMAKE_CURRENT_LIST_DIR}/../cross-linux-gnu.cmake)
