// Instance, physical device choice, logical device and compute queue: everything the backend's
// other parts share. BERTRT_VULKAN_VALIDATION=1 turns on the Khronos validation layer (with
// synchronization validation); every message it prints is counted (tests fail on any).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/vulkan/vk_api.h"

namespace bertrt::vk {

// What `bertrt info --devices` lists.
struct DeviceInfo {
  int index = 0;
  std::string name, type, driver;
  uint32_t api_version = 0;
  uint32_t subgroup_size = 0;
  uint32_t max_shared_memory = 0, max_workgroup_invocations = 0;
  uint64_t max_storage_buffer_range = 0, device_local_bytes = 0;
  // A DEVICE_LOCAL | HOST_VISIBLE memory type on the largest device-local heap.
  bool unified_memory = false;
};

// Where a buffer lives: kMapped (the backend's blocks on unified memory: DEVICE_LOCAL |
// HOST_VISIBLE where there is one, else host-visible), kDevice (DEVICE_LOCAL, not mapped: the
// blocks of a discrete GPU), kStaging (HOST_VISIBLE | HOST_COHERENT: uploads, downloads, status).
enum class Memory { kMapped, kDevice, kStaging };

class Context {
 public:
  // device < 0: BERTRT_VULKAN_DEVICE, else 0. Throws bertrt::Error naming what is missing.
  explicit Context(int device = -1);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Api& api() { return api_; }
  VkDevice device() const { return device_; }
  VkQueue queue() const { return queue_; }
  uint32_t queue_family() const { return queue_family_; }
  const DeviceInfo& info() const { return info_; }
  const VkPhysicalDeviceLimits& limits() const { return limits_; }
  const VkPhysicalDeviceProperties& properties() const { return properties_; }
  // The memory type index for `kind` among `type_bits`; -1 when none fits.
  int memory_type(uint32_t type_bits, Memory kind) const;
  // The size of the heap memory type `type` allocates from.
  VkDeviceSize heap_bytes(int type) const {
    return memory_.memoryHeaps[memory_.memoryTypes[type].heapIndex].size;
  }
  // Validation messages seen so far (0 unless the layer is on).
  static int64_t validation_messages();

 private:
  Api api_;  // this instance's and device's entry points (a copy of the loader's globals)
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkPhysicalDeviceLimits limits_{};
  VkPhysicalDeviceProperties properties_{};
  DeviceInfo info_;
};

// Every Vulkan device of this machine (an empty list without a loader or a driver).
std::vector<DeviceInfo> list_devices();

}  // namespace bertrt::vk
