// The version of this build: CMake's project(VERSION) and the git commit of the sources.
#pragma once

namespace bertrt {

// "0.2.0" (semantic versioning; the C API's bertrt_version()).
const char* version_string();
// The sources' abbreviated git commit ("1a2b3c4"), or "" for a build from a release tarball.
const char* git_commit();

}  // namespace bertrt
