#include "core/version.h"

#include "bertrt_git_commit.h"  // generated at build time (platforms/git_commit.cmake)

#ifndef BERTRT_VERSION_TEXT  // set by CMakeLists.txt from project(VERSION)
#error "BERTRT_VERSION_TEXT is not defined: build with CMake"
#endif

namespace bertrt {

const char* version_string() { return BERTRT_VERSION_TEXT; }
const char* git_commit() { return BERTRT_GIT_COMMIT; }

}  // namespace bertrt
