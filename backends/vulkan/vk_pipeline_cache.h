// The VkPipelineCache kept on disk, so a second run skips the driver's shader compiles (seconds
// on phones). File: BERTRT_VULKAN_PIPELINE_CACHE (a path; "off" disables it), else
// $XDG_CACHE_HOME/bertrt/vulkan/ or ~/.cache/bertrt/vulkan/, one file per device
// (vendor-device-pipelineCacheUUID.bin). A file written for another device or driver, or a
// damaged one, is ignored and replaced; saving is atomic and a failure to save is only a notice.
#pragma once

#include <string>

#include "backends/vulkan/vk_context.h"

namespace bertrt::vk {

class PipelineCache {
 public:
  explicit PipelineCache(Context& ctx);
  ~PipelineCache();  // saves when a pipeline was created since the load
  PipelineCache(const PipelineCache&) = delete;
  PipelineCache& operator=(const PipelineCache&) = delete;

  VkPipelineCache handle() const { return cache_; }
  void created() { dirty_ = true; }
  const std::string& path() const { return path_; }  // empty: no cache file
  size_t loaded_bytes() const { return loaded_; }

 private:
  Context& ctx_;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  std::string path_;
  size_t loaded_ = 0;
  bool dirty_ = false;
};

}  // namespace bertrt::vk
