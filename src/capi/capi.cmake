# The C API (include/bertrt/bertrt.h, src/capi/): its sources are part of the static library
# `bertrt` (the glob over src/), and libbertrt.so is the same objects as a shared library that
# exports the C API only.
target_include_directories(bertrt PUBLIC ${CMAKE_SOURCE_DIR}/include)
# The static archive goes into a shared library: position-independent code (Debian builds
# executables as PIE anyway, so the cost is nil for the CLI).
set_target_properties(bertrt PROPERTIES POSITION_INDEPENDENT_CODE ON)
if(TARGET bertrt_convert)
  set_target_properties(bertrt_convert PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(BERTRT_SHARED_SOURCES ${CMAKE_SOURCE_DIR}/src/capi/shared_library.cpp)
else()
  set(BERTRT_SHARED_SOURCES ${CMAKE_SOURCE_DIR}/src/capi/shared_library.cpp
                            ${CMAKE_SOURCE_DIR}/tools/capi/convert_unavailable.cpp)
endif()
add_library(bertrt_shared SHARED ${BERTRT_SHARED_SOURCES})
set_target_properties(bertrt_shared PROPERTIES
  OUTPUT_NAME bertrt VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/capi/exports.map)
# Only bertrt_* leaves the library (exports.map): the C++ internals, fmt, FlatBuffers, nlohmann
# and the libstdc++ template instances stay private, so an app's own copies of them cannot clash
# with ours and the ABI is exactly bertrt.h.
target_link_options(bertrt_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/src/capi/exports.map)
# Every symbol resolved at link time, except in clang's sanitizer builds: there the ASan/UBSan
# runtime lives in the (instrumented) executable that loads the library.
if(NOT (CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize"))
  target_link_options(bertrt_shared PRIVATE -Wl,--no-undefined)
endif()
# Every object of the archives goes in (nothing calls the C API inside the library, so a plain
# link would drop it); the plain bertrt/bertrt_convert after them bring their dependencies.
if(TARGET bertrt_convert)
  target_link_libraries(bertrt_shared PRIVATE -Wl,--whole-archive $<TARGET_FILE:bertrt_convert>
                        $<TARGET_FILE:bertrt> -Wl,--no-whole-archive bertrt_convert bertrt)
else()
  target_link_libraries(bertrt_shared PRIVATE -Wl,--whole-archive $<TARGET_FILE:bertrt>
                        -Wl,--no-whole-archive bertrt)
endif()
