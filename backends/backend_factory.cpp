// make_backend / backend_names: the one place that maps a backend's name to its class.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backends/backend.h"
#include "backends/checked/checked_backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/reference/reference_backend.h"
#include "core/error.h"
#ifdef BERTRT_HAVE_VULKAN
#include "backends/vulkan/vulkan_backend.h"
#endif

namespace bertrt {

std::vector<std::string> backend_names() {
#ifdef BERTRT_HAVE_VULKAN
  return {"reference", "cpu", "checked", "vulkan"};
#else
  return {"reference", "cpu", "checked"};
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name) { return make_backend(name, -1); }

std::vector<std::string> device_lines() {
#ifdef BERTRT_HAVE_VULKAN
  return vulkan_device_lines();
#else
  return {};
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name, int device) {
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  if (name == "cpu") return std::make_unique<CpuBackend>();
  if (name == "checked") return std::make_unique<CheckedBackend>(std::make_unique<CpuBackend>());
#ifdef BERTRT_HAVE_VULKAN
  if (name == "vulkan") return std::make_unique<VulkanBackend>(device);
#else
  (void)device;
  if (name == "vulkan")
    fail(
        "backend 'vulkan': this build has no Vulkan backend (rebuild with libvulkan-dev and "
        "glslc installed: cmake -DBERTRT_VULKAN=ON)");
#endif
  fail("unknown backend '{}': expected one of {}", name, fmt::join(backend_names(), ", "));
}

}  // namespace bertrt
