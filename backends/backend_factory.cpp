// make_backend / backend_names: the one place that maps a backend's name to its class.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.h"
#include "backends/checked/checked_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"

namespace bertrt {

std::vector<std::string> backend_names() { return {"reference", "cpu", "checked"}; }

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name == "cpu") return std::make_unique<CpuBackend>();
  if (name == "checked") return std::make_unique<CheckedBackend>(std::make_unique<CpuBackend>());
  fail("unknown backend '{}': expected one of {}", name, fmt::join(backend_names(), ", "));
}

}  // namespace bertrt
