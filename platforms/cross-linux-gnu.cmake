# Shared part of the ARM toolchain files (aarch64/toolchain.cmake, armhf/toolchain.cmake): Debian's
# cross compiler (crossbuild-essential-*), a sysroot of Debian's ARM libraries made by
# platforms/sysroot.sh, and qemu-user as the emulator so gtest_discover_tests and ctest run the
# ARM test programs on the host.
# Set by the includer: BERTRT_TRIPLET (aarch64-linux-gnu), BERTRT_DEBARCH (arm64),
# CMAKE_SYSTEM_PROCESSOR, BERTRT_RUN_SH (the qemu launcher).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${BERTRT_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${BERTRT_TRIPLET}-g++)

# The sysroot: -DBERTRT_SYSROOT=DIR or the environment variable, else build-sysroot-ARCH in the
# source tree (what `platforms/sysroot.sh ARCH` makes). Toolchain files are read again for every
# try_compile, so the value is also passed down through CMAKE_TRY_COMPILE_PLATFORM_VARIABLES.
if(NOT BERTRT_SYSROOT)
  if(DEFINED ENV{BERTRT_SYSROOT})
    set(BERTRT_SYSROOT $ENV{BERTRT_SYSROOT})
  else()
    get_filename_component(BERTRT_SYSROOT ${CMAKE_CURRENT_LIST_DIR}/../build-sysroot-${BERTRT_DEBARCH} ABSOLUTE)
  endif()
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES BERTRT_SYSROOT)
if(NOT EXISTS ${BERTRT_SYSROOT}/usr/lib/${BERTRT_TRIPLET})
  message(FATAL_ERROR "No ${BERTRT_DEBARCH} sysroot at ${BERTRT_SYSROOT}: run platforms/sysroot.sh "
                      "${BERTRT_DEBARCH} ${BERTRT_SYSROOT} first")
endif()
set(CMAKE_SYSROOT ${BERTRT_SYSROOT})
set(CMAKE_FIND_ROOT_PATH ${BERTRT_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # flatc, python3, qemu: host programs
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (OpenBLAS, utf8proc) reads only the sysroot's .pc files and prefixes their paths.
set(ENV{PKG_CONFIG_LIBDIR} "${BERTRT_SYSROOT}/usr/lib/${BERTRT_TRIPLET}/pkgconfig:${BERTRT_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${BERTRT_SYSROOT})
set(ENV{PKG_CONFIG_PATH} "")

# ARM programs built here run through qemu-user (tests, gtest discovery).
set(CMAKE_CROSSCOMPILING_EMULATOR env BERTRT_SYSROOT=${BERTRT_SYSROOT} ${BERTRT_RUN_SH})
