#include "backends/build_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/f32_gemm.h"
#include "backends/cpu/fc_provider.h"
#include "backends/cpu/q8_gemm.h"
#include "backends/cpu/xnnpack_fc.h"
#include "core/error.h"
#include "core/version.h"

namespace bertrt {

namespace {

// A kernel's name, or what is wrong with the environment variable that picks it (--version must
// still print: it is what one runs to see why).
template <typename F>
std::string or_error(F&& name) {
  try {
    return name();
  } catch (const Error& e) {
    return fmt::format("(none: {})", e.what());
  }
}

}  // namespace

std::string version_text(const std::string& program) {
  const std::string commit = git_commit();
  std::string out = fmt::format("{} {}{}\n", program, version_string(),
                                commit.empty() ? "" : fmt::format(" (commit {})", commit));
  std::vector<std::string> main, testing;
  for (const std::string& b : backend_names())
    (b == "reference" || b == "checked" ? testing : main).push_back(b);
  out += fmt::format("backends: {}{}\n", fmt::join(main, ", "),
                     testing.empty() ? ""
                                     : fmt::format(" (also {}, for testing)",
                                                   fmt::join(testing, " and ")));
  const std::string f32 = or_error([] { return std::string(cpu::f32_kernel_name(cpu::f32_best_kernel())); });
  const std::string q8 = or_error([] { return std::string(cpu::q8_kernel_name(cpu::q8_best_kernel())); });
  const std::string fc = or_error([] { return std::string(cpu::fc_provider_name(cpu::fc_provider_from_env())); });
  out += fmt::format("cpu kernels on this host: fp32 {}, int8 {}, fc provider {} ({})\n", f32, q8,
                     fc, cpu::xnnpack_built() ? "XNNPACK built" : "no XNNPACK in this build");
  out +=
      "  (the fc provider runs the fully-connected (Linear) layers' fp32 matrix products at "
      "inference:\n   openblas, xnnpack, bertrt's own kernels, or auto: per shape; "
      "BERTRT_FC_PROVIDER, BERTRT_F32_KERNEL\n   and BERTRT_Q8_KERNEL choose otherwise)\n";
  return out;
}

}  // namespace bertrt
