// What `bertrt --version` and `bertrt-convert --version` print: the version, the git commit of
// the sources, the backends built in, and the cpu backend's kernels as this host picks them.
#pragma once

#include <string>

namespace bertrt {

// Three lines, e.g.
//   bertrt 0.2.0 (commit 1a2b3c4)
//   backends: cpu, vulkan (also reference and checked, for testing)
//   cpu kernels on this host: fp32 avx512f, int8 avx512-vnni, fc provider auto (XNNPACK built)
// and a line explaining the fc provider. The commit is left out for a build from a tarball.
// `program` is the first word ("bertrt", "bertrt-convert").
std::string version_text(const std::string& program);

}  // namespace bertrt
