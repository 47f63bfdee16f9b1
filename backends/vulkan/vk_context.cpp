#include "backends/vulkan/vk_context.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace bertrt::vk {
namespace {

std::atomic<int64_t> g_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  ++g_messages;
  std::fprintf(stderr, "bertrt: vulkan validation: %s\n", data->pMessage);
  return VK_FALSE;
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

bool has_layer(Api& api, const char* name) {
  uint32_t n = 0;
  api.vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  api.vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
      return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
      return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      return "CPU";
    default:
      return "other";
  }
}

constexpr VkMemoryPropertyFlags kUma = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kHost =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

constexpr VkMemoryPropertyFlags kDevice = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;

int find_type(const VkPhysicalDeviceMemoryProperties& m, uint32_t bits,
              VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (m.memoryTypes[i].propertyFlags & want) == want) return int(i);
  return -1;
}

// Unified memory: a DEVICE_LOCAL | HOST_VISIBLE type on the largest device-local heap (phones,
// integrated GPUs, lavapipe, resizable-BAR cards) — not the 256 MiB BAR window of a discrete GPU.
bool unified(const VkPhysicalDeviceMemoryProperties& m) {
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < m.memoryHeapCount; ++i)
    if (m.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      largest = std::max(largest, m.memoryHeaps[i].size);
  for (uint32_t i = 0; i < m.memoryTypeCount; ++i)
    if ((m.memoryTypes[i].propertyFlags & kUma) == kUma &&
        m.memoryHeaps[m.memoryTypes[i].heapIndex].size >= largest)
      return true;
  return false;
}

DeviceInfo describe(Api& api, VkPhysicalDevice pd, int index) {
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &drv;
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sub};
  api.vkGetPhysicalDeviceProperties2(pd, &p2);
  VkPhysicalDeviceMemoryProperties mem;
  api.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  DeviceInfo d;
  d.index = index;
  d.name = p2.properties.deviceName;
  d.type = type_name(p2.properties.deviceType);
  d.driver = drv.driverName;
  d.api_version = p2.properties.apiVersion;
  d.subgroup_size = sub.subgroupSize;
  d.max_shared_memory = p2.properties.limits.maxComputeSharedMemorySize;
  d.max_workgroup_invocations = p2.properties.limits.maxComputeWorkGroupInvocations;
  d.max_storage_buffer_range = p2.properties.limits.maxStorageBufferRange;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes += mem.memoryHeaps[i].size;
  d.unified_memory = unified(mem);
  return d;
}

VkInstance create_instance(Api& api, bool validation) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "bertrt";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  // Synchronization validation: hazards between dispatches are what a GPU backend gets wrong.
  VkValidationFeatureEnableEXT enables[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  if (validation) {
    if (!has_layer(api, layer))
      fail(
          "vulkan: BERTRT_VULKAN_VALIDATION is set but {} is not installed (Debian: "
          "vulkan-validationlayers)",
          layer);
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &ext;
    ci.pNext = &features;
  }
  VkInstance instance = VK_NULL_HANDLE;
  const VkResult r = api.vkCreateInstance(&ci, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    fail(
        "vulkan: the loader found no Vulkan driver (VK_ERROR_INCOMPATIBLE_DRIVER; Debian: "
        "mesa-vulkan-drivers, or the GPU vendor's driver)");
  check(r, "vkCreateInstance");
  load_instance_fns(api, instance);
  return instance;
}

std::vector<VkPhysicalDevice> physical_devices(Api& api, VkInstance instance) {
  uint32_t n = 0;
  check(api.vkEnumeratePhysicalDevices(instance, &n, nullptr), "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> out(n);
  check(api.vkEnumeratePhysicalDevices(instance, &n, out.data()), "vkEnumeratePhysicalDevices");
  return out;
}

}  // namespace

Context::Context(int device) : api_(loader()) {
  const bool validation = env_on("BERTRT_VULKAN_VALIDATION");
  instance_ = create_instance(api_, validation);
  if (validation) {
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_message;
    check(api_.vkCreateDebugUtilsMessengerEXT(instance_, &mi, nullptr, &messenger_),
          "vkCreateDebugUtilsMessengerEXT");
  }
  const std::vector<VkPhysicalDevice> devices = physical_devices(api_, instance_);
  if (devices.empty())
    fail(
        "vulkan: the loader found no Vulkan device (no driver installed? Debian: "
        "mesa-vulkan-drivers)");
  if (device < 0) {
    device = 0;
    if (const char* env = std::getenv("BERTRT_VULKAN_DEVICE"); env && *env) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (*end != '\0' || v < 0 || v > 1024)
        fail("BERTRT_VULKAN_DEVICE: '{}' is not a device index (expected an integer from 0; "
             "bertrt info --devices lists them)", env);
      device = int(v);
    }
  }
  if (device >= int(devices.size()))
    fail(
        "vulkan: device {} asked for (--device / BERTRT_VULKAN_DEVICE), this machine has {} "
        "(bertrt info --devices lists them)",
        device, devices.size());
  physical_ = devices[size_t(device)];
  info_ = describe(api_, physical_, device);
  VkPhysicalDeviceProperties& props = properties_;
  api_.vkGetPhysicalDeviceProperties(physical_, &props);
  limits_ = props.limits;
  if (props.apiVersion < VK_API_VERSION_1_1)
    fail("vulkan: device '{}' supports Vulkan {}.{}; bertrt needs 1.1", info_.name,
         VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
  api_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

  uint32_t nq = 0;
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  api_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, families.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) queue_family_ = i, found = true;
  if (!found) fail("vulkan: device '{}' has no compute queue", info_.name);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  check(api_.vkCreateDevice(physical_, &di, nullptr, &device_), "vkCreateDevice");
  load_device_fns(api_, device_);
  api_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Context::~Context() {
  if (device_) api_.vkDestroyDevice(device_, nullptr);
  if (messenger_) api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) api_.vkDestroyInstance(instance_, nullptr);
}

int Context::memory_type(uint32_t type_bits, Memory kind) const {
  const int uma = find_type(memory_, type_bits, kUma);
  if (kind == Memory::kDevice) {
    const int d = find_type(memory_, type_bits, kDevice);
    return d >= 0 ? d : memory_type(type_bits, Memory::kMapped);
  }
  if (kind == Memory::kMapped && uma >= 0) return uma;
  return find_type(memory_, type_bits, kHost);
}

int64_t Context::validation_messages() { return g_messages.load(); }

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  try {
    Api api = loader();  // own copy: the instance functions are this instance's
    VkInstance instance = create_instance(api, false);
    int i = 0;
    for (VkPhysicalDevice pd : physical_devices(api, instance))
      out.push_back(describe(api, pd, i++));
    api.vkDestroyInstance(instance, nullptr);
  } catch (const Error&) {
    return {};
  }
  return out;
}

}  // namespace bertrt::vk
