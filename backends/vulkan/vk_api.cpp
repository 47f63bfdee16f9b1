#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>

#include "core/error.h"

namespace bertrt::vk {

Api& loader() {
  static Api api = [] {
    Api a;
    const char* names[] = {"libvulkan.so.1", "libvulkan.so"};
    void* lib = nullptr;
    for (const char* n : names)
      if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib)
      fail(
          "vulkan: no Vulkan loader (looked for libvulkan.so.1 and libvulkan.so; on Debian: "
          "apt-get install libvulkan1 and a driver, e.g. mesa-vulkan-drivers)");
    a.vkGetInstanceProcAddr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!a.vkGetInstanceProcAddr) fail("vulkan: the loader has no vkGetInstanceProcAddr");
    a.vkCreateInstance = reinterpret_cast<PFN_vkCreateInstance>(
        a.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"));
    a.vkEnumerateInstanceLayerProperties = reinterpret_cast<PFN_vkEnumerateInstanceLayerProperties>(
        a.vkGetInstanceProcAddr(nullptr, "vkEnumerateInstanceLayerProperties"));
    return a;
  }();
  return api;
}

void load_instance_fns(Api& a, VkInstance instance) {
#define BERTRT_VK_LOAD(name) \
  a.name = reinterpret_cast<PFN_##name>(a.vkGetInstanceProcAddr(instance, #name));
  BERTRT_VK_INSTANCE_FNS(BERTRT_VK_LOAD)
#undef BERTRT_VK_LOAD
}

void load_device_fns(Api& a, VkDevice device) {
#define BERTRT_VK_LOAD(name)                                                   \
  a.name = reinterpret_cast<PFN_##name>(a.vkGetDeviceProcAddr(device, #name)); \
  if (!a.name) fail("vulkan: the driver has no {}", #name);
  BERTRT_VK_DEVICE_FNS(BERTRT_VK_LOAD)
#undef BERTRT_VK_LOAD
}

const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS:
      return "VK_SUCCESS";
    case VK_NOT_READY:
      return "VK_NOT_READY";
    case VK_TIMEOUT:
      return "VK_TIMEOUT";
    case VK_ERROR_OUT_OF_HOST_MEMORY:
      return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
      return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED:
      return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST:
      return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED:
      return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT:
      return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT:
      return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER:
      return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS:
      return "VK_ERROR_TOO_MANY_OBJECTS";
    default:
      return "VkResult error";
  }
}

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) fail("vulkan: {}: {} ({})", what, result_name(r), int(r));
}

}  // namespace bertrt::vk
