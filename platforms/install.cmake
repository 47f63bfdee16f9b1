# Install rules and the CPack tarball (`cmake --build --preset aarch64 --target package`):
#   bin/bertrt, lib/libbertrt.a, lib/libbertrt.so* (the C API), include/bertrt/ (bertrt.h and the
#   C++ headers, rooted as in the source tree), lib/pkgconfig/bertrt.pc, lib/cmake/bertrt/, and
#   for a cross build the shared libraries from the sysroot that a stock board may lack (OpenBLAS and
#   its libgfortran, utf8proc, pthreadpool, fmt), found next to the binary through
#   RPATH $ORIGIN/../lib, so the unpacked folder runs as it is. glibc, libstdc++ and libgcc_s are
#   not shipped: every Debian 12 / Raspberry Pi OS (bookworm) system has them, and a newer glibc
#   than the board's could not be loaded anyway.
if(TARGET bertrt_cli)
  install(TARGETS bertrt_cli RUNTIME DESTINATION bin)
endif()
install(TARGETS bertrt ARCHIVE DESTINATION lib)
if(TARGET bertrt_convert_cli)
  install(TARGETS bertrt_convert_cli RUNTIME DESTINATION bin)
endif()
# The C API: libbertrt.so.0.1.0 (SONAME libbertrt.so.0) + links, bertrt/bertrt.h, pkg-config and
# find_package(bertrt) files (src/capi/capi.cmake builds the shared library).
install(TARGETS bertrt_shared LIBRARY DESTINATION lib)
install(FILES ${CMAKE_SOURCE_DIR}/include/bertrt/bertrt.h DESTINATION include/bertrt)
configure_file(${CMAKE_SOURCE_DIR}/platforms/bertrt.pc.in ${CMAKE_BINARY_DIR}/bertrt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/bertrt.pc DESTINATION lib/pkgconfig)
include(CMakePackageConfigHelpers)
configure_file(${CMAKE_SOURCE_DIR}/platforms/bertrtConfig.cmake.in
               ${CMAKE_BINARY_DIR}/bertrtConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/bertrtConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/bertrtConfig.cmake ${CMAKE_BINARY_DIR}/bertrtConfigVersion.cmake
        DESTINATION lib/cmake/bertrt)
# The Python module (python/bertrt, ctypes over libbertrt.so; it needs NumPy) into the site
# folder of a Python that can import it: BERTRT_PYTHON, else the first of `python3` on PATH and
# /usr/bin/python3 that has NumPy (pyenv's python3 may lack it where Debian's has python3-numpy).
# The folder is that Python's own, relative to the prefix: lib/python3.X/dist-packages for
# Debian's python3 (/usr/local/lib/python3.X/dist-packages with the default prefix), else
# lib/python3.X/site-packages. The module is told where the installed library is relative to
# itself: the prefix can be moved or unpacked anywhere (an absolute path pointed the CPack
# tarball's module at the build's staging folder), and the file is in install_manifest.txt like
# the others.
if(NOT CMAKE_CROSSCOMPILING)
  set(BERTRT_PYTHON "" CACHE FILEPATH
      "Python whose site folder gets the bertrt module (default: python3 on PATH or /usr/bin/python3, the first with NumPy)")
  set(_site_py "import sys, sysconfig, pathlib; p = pathlib.PurePath(sysconfig.get_path('purelib')); print('lib/python%d.%d/%s' % (sys.version_info[0], sys.version_info[1], p.name))")
  set(_numpy_py "import numpy; print(numpy.__version__)")
  if(BERTRT_PYTHON)
    set(_candidates ${BERTRT_PYTHON})
  else()
    find_program(_path_python3 NAMES python3 NO_CACHE)
    set(_candidates ${_path_python3} /usr/bin/python3)
  endif()
  set(_python "")
  set(_first "")
  foreach(_c ${_candidates})
    if(NOT EXISTS ${_c})
      continue()
    endif()
    if(NOT _first)
      set(_first ${_c})
    endif()
    execute_process(COMMAND ${_c} -c "${_numpy_py}" OUTPUT_VARIABLE _numpy
                    RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_rc EQUAL 0)
      set(_python ${_c})
      break()
    endif()
  endforeach()
  if(NOT _python AND _first)
    set(_python ${_first})
    set(_numpy "missing: the module needs it (Debian: apt-get install python3-numpy)")
  endif()
  if(_python)
    execute_process(COMMAND ${_python} -c "${_site_py}" OUTPUT_VARIABLE _site
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  set(BERTRT_PYTHON_EXECUTABLE ${_python})  # for the tests (tests/capi/tests.cmake)
  if(_site)
    set(BERTRT_PYTHON_DIR ${_site} CACHE STRING
        "where cmake --install puts the bertrt Python module (relative to the prefix)")
    message(STATUS "bertrt: Python module -> <prefix>/${BERTRT_PYTHON_DIR} (for ${_python}, NumPy ${_numpy})")
    install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/bertrt DESTINATION ${BERTRT_PYTHON_DIR}
            FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
    file(RELATIVE_PATH _rel /prefix/${BERTRT_PYTHON_DIR}/bertrt
         /prefix/lib/libbertrt.so.${PROJECT_VERSION_MAJOR})
    file(WRITE ${CMAKE_BINARY_DIR}/python/_library_path.py
         "# Written by cmake: the installed libbertrt.so, relative to this folder.\n"
         "RELATIVE_LIBRARY = \"${_rel}\"\n")
    install(FILES ${CMAKE_BINARY_DIR}/python/_library_path.py
            DESTINATION ${BERTRT_PYTHON_DIR}/bertrt)
  else()
    message(STATUS "bertrt: no python3 found: the Python module is not installed")
  endif()
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/ DESTINATION include/bertrt FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/backends/ DESTINATION include/bertrt/backends
        FILES_MATCHING PATTERN "*.h")
install(FILES ${GEN_DIR}/bertrt_generated.h DESTINATION include/bertrt)

if(CMAKE_CROSSCOMPILING AND CMAKE_SYSROOT AND TARGET bertrt_cli)
  # DT_RPATH rather than DT_RUNPATH: RPATH also serves the libraries' own dependencies
  # (libopenblas.so.0 -> libgfortran.so.5), RUNPATH only the binary's direct ones.
  set_target_properties(bertrt_cli PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib")
  set_target_properties(bertrt_shared PROPERTIES INSTALL_RPATH "\$ORIGIN")
  target_link_options(bertrt_shared PRIVATE -Wl,--disable-new-dtags)
  target_link_options(bertrt_cli PRIVATE -Wl,--disable-new-dtags)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -dumpmachine OUTPUT_VARIABLE _triplet
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(_libdir ${CMAKE_SYSROOT}/usr/lib/${_triplet})
  # Sonames as the binary records them (DT_NEEDED); platforms/ci_arm.sh checks that every NEEDED
  # entry of the package is either shipped here or part of the base system.
  set(_shipped openblas-pthread/libopenblas.so.0 libgfortran.so.5 libutf8proc.so.2
               libpthreadpool.so.0 libfmt.so.9)
  if(BERTRT_XNNPACK)  # the fully-connected provider (backends/cpu/xnnpack_fc.h) and its cpuinfo
    list(APPEND _shipped libXNNPACK.so.0 libcpuinfo.so.0)
  endif()
  foreach(_so ${_shipped})
    if(NOT EXISTS ${_libdir}/${_so})
      message(FATAL_ERROR "package: ${_libdir}/${_so} is missing from the sysroot")
    endif()
    get_filename_component(_real ${_libdir}/${_so} REALPATH)
    get_filename_component(_name ${_so} NAME)
    install(FILES ${_real} DESTINATION lib RENAME ${_name})
  endforeach()
endif()

set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME bertrt)
set(CPACK_PACKAGE_VENDOR bertrt)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "BERT inference, pre-training and fine-tuning on small devices")
set(CPACK_PACKAGE_FILE_NAME "bertrt-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_STRIP_FILES ON)
# The source tarball (`--target package_source`): the tracked tree, not build folders or .git
# (CPack's default list took build/ with its binaries and CMakeCache.txt).
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\.git/" "/build[^/]*/" "/__pycache__/" "\\.swp$")
include(CPack)
