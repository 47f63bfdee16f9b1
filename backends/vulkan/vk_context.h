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
  bool unified_memory = false;  // a DEVICE_LOCAL | HOST_VISIBLE memory type
};

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
  // The memory type for arena blocks: DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT when the
  // device has one (unified memory), else HOST_VISIBLE | HOST_COHERENT (memory the host maps;
  // slower on a discrete GPU, but correct). -1 when none fits `type_bits`.
  int memory_type(uint32_t type_bits) const;
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
  DeviceInfo info_;
};

// Every Vulkan device of this machine (an empty list without a loader or a driver).
std::vector<DeviceInfo> list_devices();

}  // namespace bertrt::vk
