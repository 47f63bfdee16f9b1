#include "backends/vulkan/vk_pipeline_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"

namespace bertrt::vk {
namespace {

std::string default_path(const VkPhysicalDeviceProperties& p) {
  std::string dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = std::string(h) + "/.cache";
  else
    return "";
  std::string uuid;
  for (uint8_t b : p.pipelineCacheUUID) uuid += fmt::format("{:02x}", b);
  return fmt::format("{}/bertrt/vulkan/{:04x}-{:04x}-{}.bin", dir, p.vendorID, p.deviceID, uuid);
}

// mkdir -p of the file's folder; false when it cannot be made.
bool make_parent(const std::string& path) {
  for (size_t i = 1; i < path.size(); ++i)
    if (path[i] == '/') {
      const std::string d = path.substr(0, i);
      if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  return true;
}

// The header Vulkan puts in front of cache data (VkPipelineCacheHeaderVersionOne): the data is
// used only when it was written for this very device and driver.
bool matches(const std::vector<char>& data, const VkPhysicalDeviceProperties& p) {
  if (data.size() < 32) return false;
  uint32_t words[4];
  std::memcpy(words, data.data(), 16);
  return words[0] >= 32 && words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == p.vendorID && words[3] == p.deviceID &&
         std::memcmp(data.data() + 16, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
}

}  // namespace

PipelineCache::PipelineCache(Context& ctx) : ctx_(ctx) {
  const char* env = std::getenv("BERTRT_VULKAN_PIPELINE_CACHE");
  if (env && *env)
    path_ = std::strcmp(env, "off") == 0 ? "" : env;
  else
    path_ = default_path(ctx.properties());
  std::vector<char> data;
  if (!path_.empty()) {
    std::ifstream in(path_, std::ios::binary);
    if (in) data.assign(std::istreambuf_iterator<char>(in), {});
    if (!matches(data, ctx.properties())) data.clear();
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  ci.initialDataSize = data.size();
  ci.pInitialData = data.empty() ? nullptr : data.data();
  check(ctx.api().vkCreatePipelineCache(ctx.device(), &ci, nullptr, &cache_),
        "vkCreatePipelineCache");
  loaded_ = data.size();
}

PipelineCache::~PipelineCache() {
  Api& api = ctx_.api();
  if (dirty_ && !path_.empty()) {
    size_t n = 0;
    std::vector<char> data;
    if (api.vkGetPipelineCacheData(ctx_.device(), cache_, &n, nullptr) == VK_SUCCESS && n) {
      data.resize(n);
      if (api.vkGetPipelineCacheData(ctx_.device(), cache_, &n, data.data()) != VK_SUCCESS)
        data.clear();
      data.resize(std::min(n, data.size()));
    }
    try {
      if (!data.empty()) {
        if (!make_parent(path_)) fail("cannot create the folder of {}", path_);
        AtomicFile f(path_);
        f.write(data.data(), data.size());
        f.commit();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bertrt: vulkan: the pipeline cache was not saved: %s\n", e.what());
    }
  }
  api.vkDestroyPipelineCache(ctx_.device(), cache_, nullptr);
}

}  // namespace bertrt::vk
