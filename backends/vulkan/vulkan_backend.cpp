#include "backends/vulkan/vulkan_backend.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "backends/vulkan/shaders/push_constants.h"
#include "backends/vulkan/vk_host_wait.h"
#include "backends/vulkan/vk_pipeline_cache.h"
#include "backends/vulkan/vk_shaders.h"
#include "backends/quant_checks.h"
#include "core/error.h"

namespace bertrt {

using vk::check;

namespace {

constexpr int kMaxBatch = 64;    // dispatches per submission (drivers kill endless ones)
constexpr int kMaxBindings = 8;  // storage buffers per dispatch (layernorm_backward: 8)
constexpr uint64_t kFenceTimeoutNs = 120ull * 1000 * 1000 * 1000;

struct Block {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  size_t bytes = 0;
  void* mapped = nullptr;    // the host's view (mapped and staging memory)
  void* reserved = nullptr;  // device memory: the address range alloc() handed out for it
  size_t reserved_bytes = 0;
};

struct Pipeline {
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  std::string name;  // the shader and its specialization, for the profile
};

// BERTRT_VULKAN_PROFILE=1: every dispatch is submitted and waited for on its own, and the wall
// time per pipeline is printed when the backend goes (slow; it shows where a device's time goes).
struct Profile {
  struct Entry {
    double ms = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Entry> by_pipeline;
  void print() const {
    double total = 0;
    for (const auto& [name, e] : by_pipeline) total += e.ms;
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [name, e] : by_pipeline)
      rows.push_back({e.ms, fmt::format("{:>10.1f} ms {:>5.1f} % {:>8} x  {}", e.ms,
                                        total > 0 ? 100 * e.ms / total : 0.0, e.calls, name)});
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "bertrt: vulkan profile (wall time per pipeline, %.1f ms in all)\n", total);
    for (const auto& r : rows) std::fprintf(stderr, "%s\n", r.second.c_str());
  }
};

// A buffer binding of a dispatch: a window of a block that starts at an offset the device can
// bind (minStorageBufferOffsetAlignment) and is at most maxStorageBufferRange long (lavapipe:
// 128 MiB, smaller than BERT-base's parameter block), and the element offset of the argument
// inside the window, which goes in the push constants (ggml's misaligned offsets).
struct Ref {
  VkBuffer buffer;
  uint32_t offset;  // elements from the window's start
  VkDeviceSize window = 0, range = VK_WHOLE_SIZE;
};

}  // namespace

struct VulkanBackend::Impl {
  vk::Context ctx;
  vk::Api& api;
  std::map<uintptr_t, Block> blocks;
  std::unordered_map<std::string, Pipeline> pipelines;
  vk::PipelineCache cache;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  vk::HostWait host_wait;  // the wait on `fence`: sleeps, whatever the driver does
  VkDescriptorPool descriptors = VK_NULL_HANDLE;
  bool recording = false;
  int pending = 0;
  uint32_t group = 256, tile = 16;
  struct Download {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Download> downloads;
  // Mapped (unified memory: alloc() returns the mapped address) or device memory (a discrete
  // GPU: alloc() returns an address range reserved without access, which only ops resolve).
  bool mapped_mode = true;
  std::vector<Block> staging;  // upload sources (and outgrown scratch), freed after submission
  // Errors found by shaders (push_constants.h BERTRT_VK_ERROR_*): 4 words, checked at sync().
  Block status;
  uint32_t* status_words = nullptr;
  // Partial sums and per-row values of the reductions (grow-only).
  Block scratch_block;

  explicit Impl(int device) : ctx(device), api(ctx.api()), cache(ctx) {
    const char* mode = std::getenv("BERTRT_VULKAN_MEMORY");
    if (mode && *mode) {
      if (std::strcmp(mode, "mapped") != 0 && std::strcmp(mode, "device") != 0)
        fail("vulkan: BERTRT_VULKAN_MEMORY is '{}'; expected 'mapped' or 'device'", mode);
      mapped_mode = std::strcmp(mode, "mapped") == 0;
    } else {
      mapped_mode = ctx.info().unified_memory;
    }
    const VkPhysicalDeviceLimits& l = ctx.limits();
    group = std::min<uint32_t>(256, l.maxComputeWorkGroupInvocations);
    // GEMM: 16×16 threads and two 16 × 64 float slabs (8 KiB), else 8×8 (2 KiB; Vulkan
    // guarantees 16 KiB and 128 threads).
    tile = l.maxComputeWorkGroupInvocations >= 256 && l.maxComputeSharedMemorySize >= 8192 ? 16 : 8;
    VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    ci.queueFamilyIndex = ctx.queue_family();
    check(api.vkCreateCommandPool(ctx.device(), &ci, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(api.vkAllocateCommandBuffers(ctx.device(), &ai, &cmd), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(api.vkCreateFence(ctx.device(), &fi, nullptr, &fence), "vkCreateFence");
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxBatch * kMaxBindings};
    VkDescriptorPoolCreateInfo di{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    di.maxSets = kMaxBatch;
    di.poolSizeCount = 1;
    di.pPoolSizes = &size;
    check(api.vkCreateDescriptorPool(ctx.device(), &di, nullptr, &descriptors),
          "vkCreateDescriptorPool");
    status = make_block(16, vk::Memory::kStaging);
    status_words = static_cast<uint32_t*>(status.mapped);
    std::memset(status_words, 0, 16);
  }

  std::unique_ptr<Profile> profile = [] {
    const char* v = std::getenv("BERTRT_VULKAN_PROFILE");
    return v && *v && std::strcmp(v, "0") != 0 ? std::make_unique<Profile>() : nullptr;
  }();

  ~Impl() {
    if (profile) profile->print();
    VkDevice d = ctx.device();
    for (auto& [name, p] : pipelines) {
      api.vkDestroyPipeline(d, p.pipeline, nullptr);
      api.vkDestroyPipelineLayout(d, p.layout, nullptr);
      api.vkDestroyDescriptorSetLayout(d, p.set_layout, nullptr);
    }
    for (auto& [start, b] : blocks) free_block(b);
    for (Block& b : staging) free_block(b);
    free_block(status);
    if (scratch_block.buffer) free_block(scratch_block);
    api.vkDestroyDescriptorPool(d, descriptors, nullptr);
    api.vkDestroyFence(d, fence, nullptr);
    api.vkDestroyCommandPool(d, pool, nullptr);
  }

  Block make_block(size_t bytes, vk::Memory kind) {
    VkDevice d = ctx.device();
    Block b;
    b.bytes = bytes;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = (std::max<size_t>(bytes, 4) + 3) / 4 * 4;  // byte arrays bind as 32-bit words
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    const VkResult rb = api.vkCreateBuffer(d, &bi, nullptr, &b.buffer);
    if (rb == VK_ERROR_OUT_OF_DEVICE_MEMORY || rb == VK_ERROR_OUT_OF_HOST_MEMORY)
      fail("vulkan: out of device memory allocating {} bytes on '{}' ({})", bytes, ctx.info().name,
           vk::result_name(rb));
    check(rb, "vkCreateBuffer");
    VkMemoryRequirements req;
    api.vkGetBufferMemoryRequirements(d, b.buffer, &req);
    const int type = ctx.memory_type(req.memoryTypeBits, kind);
    if (type < 0) {
      api.vkDestroyBuffer(d, b.buffer, nullptr);
      fail("vulkan: device '{}' has no host-visible memory type for buffers", ctx.info().name);
    }
    if (req.size > ctx.heap_bytes(type)) {  // Vulkan forbids asking (a validation error)
      api.vkDestroyBuffer(d, b.buffer, nullptr);
      fail("vulkan: out of device memory allocating {} bytes on '{}' (its heap has {} bytes)",
           bytes, ctx.info().name, ctx.heap_bytes(type));
    }
    VkMemoryAllocateInfo mi{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mi.allocationSize = req.size;
    mi.memoryTypeIndex = uint32_t(type);
    const VkResult r = api.vkAllocateMemory(d, &mi, nullptr, &b.memory);
    if (r != VK_SUCCESS) {
      api.vkDestroyBuffer(d, b.buffer, nullptr);
      fail("vulkan: out of device memory allocating {} bytes on '{}' ({})", bytes, ctx.info().name,
           vk::result_name(r));
    }
    check(api.vkBindBufferMemory(d, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (kind != vk::Memory::kDevice)
      check(api.vkMapMemory(d, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    return b;
  }

  void free_block(Block& b) {
    if (b.mapped) api.vkUnmapMemory(ctx.device(), b.memory);
    if (b.reserved) munmap(b.reserved, b.reserved_bytes);
    api.vkDestroyBuffer(ctx.device(), b.buffer, nullptr);
    api.vkFreeMemory(ctx.device(), b.memory, nullptr);
  }

  // The block holding [p, p + bytes), or an error naming the op and the argument; the Ref's
  // offset counts `unit`-byte elements (4: float/int arrays, 1: the byte arrays of int8 ops).
  Ref resolve(const char* op, const char* arg, const void* p, size_t bytes, uint32_t unit = 4) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = blocks.upper_bound(a);
    if (it != blocks.begin()) {
      --it;
      if (a >= it->first && a + bytes <= it->first + it->second.bytes) {
        const uintptr_t off = a - it->first;
        if (off % unit)
          fail("vulkan: {}: argument '{}' is not {}-byte aligned inside its block", op, arg, unit);
        const VkDeviceSize align =
            std::max<VkDeviceSize>(4, ctx.limits().minStorageBufferOffsetAlignment);
        const VkDeviceSize start = off / align * align;
        const VkDeviceSize range = std::max<VkDeviceSize>(4, (off + bytes - start + 3) / 4 * 4);
        if (range > ctx.limits().maxStorageBufferRange)
          fail(
              "vulkan: {}: argument '{}' spans {} bytes, more than device '{}' binds at once "
              "({} bytes, maxStorageBufferRange)",
              op, arg, bytes, ctx.info().name, ctx.limits().maxStorageBufferRange);
        return {it->second.buffer, uint32_t((off - start) / unit), start, range};
      }
    }
    fail("vulkan: {}: argument '{}' ({} bytes at {}) is not memory of the vulkan backend", op, arg,
         bytes, p);
  }

  // The buffer and byte offset of [p, p + bytes) for a transfer (vkCmdCopyBuffer): unlike a
  // shader binding it has no maxStorageBufferRange limit, so a whole weight blob larger than the
  // device binds at once (BERT-base: 440 MB; phones bind 128 MiB) still uploads in one copy.
  std::pair<VkBuffer, VkDeviceSize> locate(const char* op, const char* arg, const void* p,
                                           size_t bytes) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = blocks.upper_bound(a);
    if (it != blocks.begin()) {
      --it;
      if (a >= it->first && a + bytes <= it->first + it->second.bytes)
        return {it->second.buffer, a - it->first};
    }
    fail("vulkan: {}: argument '{}' ({} bytes at {}) is not memory of the vulkan backend", op, arg,
         bytes, p);
  }

  // Whether the device binds this many storage buffers in one shader (Vulkan guarantees 4;
  // the ops that need more run on the cpu where it does not).
  bool binds(int n) const {
    return uint32_t(n) <= ctx.limits().maxPerStageDescriptorStorageBuffers;
  }

  // From p to the end of its block (tables indexed by ids in backend memory).
  Ref resolve_to_end(const char* op, const char* arg, const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = blocks.upper_bound(a);
    if (it != blocks.begin()) {
      --it;
      if (a >= it->first && a < it->first + it->second.bytes) {
        // At most what the device binds at once: a table larger than that is reported by the
        // shader for the first row it cannot reach (BERTRT_VK_ERROR_WINDOW).
        const VkDeviceSize align =
            std::max<VkDeviceSize>(4, ctx.limits().minStorageBufferOffsetAlignment);
        const size_t limit = (ctx.limits().maxStorageBufferRange - (a - it->first) % align) / 4 * 4;
        return resolve(op, arg, p, std::min<size_t>(it->first + it->second.bytes - a, limit));
      }
    }
    return resolve(op, arg, p, 4);  // the error
  }

  Pipeline& pipeline(const char* name, const vk::Spirv& code, int bindings, uint32_t push_bytes,
                     std::vector<uint32_t> spec) {
    const std::string key = fmt::format("{}/{}", name, fmt::join(spec, ","));
    auto it = pipelines.find(key);
    if (it != pipelines.end()) return it->second;
    VkDevice d = ctx.device();
    Pipeline p;
    std::vector<VkDescriptorSetLayoutBinding> b(static_cast<size_t>(bindings));
    for (int i = 0; i < bindings; ++i)
      b[size_t(i)] = {uint32_t(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                      VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = uint32_t(bindings);
    li.pBindings = b.data();
    check(api.vkCreateDescriptorSetLayout(d, &li, nullptr, &p.set_layout),
          "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &p.set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &range;
    check(api.vkCreatePipelineLayout(d, &pl, nullptr, &p.layout), "vkCreatePipelineLayout");
    VkShaderModuleCreateInfo si{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    si.codeSize = code.words * 4;
    si.pCode = code.code;
    VkShaderModule module;
    check(api.vkCreateShaderModule(d, &si, nullptr, &module), "vkCreateShaderModule");
    std::vector<VkSpecializationMapEntry> entries;
    for (uint32_t i = 0; i < spec.size(); ++i) entries.push_back({i, i * 4, 4});
    VkSpecializationInfo sp{uint32_t(entries.size()), entries.data(), spec.size() * 4, spec.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &sp;
    ci.layout = p.layout;
    const VkResult r =
        api.vkCreateComputePipelines(d, cache.handle(), 1, &ci, nullptr, &p.pipeline);
    cache.created();
    api.vkDestroyShaderModule(d, module, nullptr);
    if (r != VK_SUCCESS)
      fail("vulkan: creating the '{}' pipeline failed on '{}': {}", name, ctx.info().name,
           vk::result_name(r));
    p.name = key;
    return pipelines.emplace(key, p).first->second;
  }

  void begin() {
    if (recording) return;
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(api.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
    recording = true;
  }

  // Orders everything recorded so far before what follows (a global barrier: simple and, on
  // the small graphs of BERT, cheap next to the dispatches).
  void barrier(VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                       VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    mb.dstAccessMask = dst_access;
    api.vkCmdPipelineBarrier(cmd,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             dst_stage, 0, 1, &mb, 0, nullptr, 0, nullptr);
  }
  void barrier() {
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
  }

  void recorded() {
    barrier();
    if (++pending >= kMaxBatch) submit();
  }

  void dispatch(Pipeline& p, std::initializer_list<Ref> refs, const void* push, uint32_t push_bytes,
                uint32_t gx, uint32_t gy, uint32_t gz) {
    if (refs.size() > size_t(kMaxBindings))
      fail("vulkan: a dispatch binds {} buffers", refs.size());
    begin();
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = descriptors;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.set_layout;
    VkDescriptorSet set;
    check(api.vkAllocateDescriptorSets(ctx.device(), &ai, &set), "vkAllocateDescriptorSets");
    VkDescriptorBufferInfo infos[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    uint32_t n = 0;
    for (const Ref& r : refs) {
      infos[n] = {r.buffer, r.window, r.range};
      writes[n] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[n].dstSet = set;
      writes[n].dstBinding = n;
      writes[n].descriptorCount = 1;
      writes[n].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[n].pBufferInfo = &infos[n];
      ++n;
    }
    api.vkUpdateDescriptorSets(ctx.device(), n, writes, 0, nullptr);
    api.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
    api.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0,
                                nullptr);
    api.vkCmdPushConstants(cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
    api.vkCmdDispatch(cmd, gx, gy, gz);
    if (profile) {
      const auto t0 = std::chrono::steady_clock::now();
      submit();
      Profile::Entry& e = profile->by_pipeline[p.name];
      e.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++e.calls;
      return;
    }
    recorded();
  }

  // Submits what is recorded and waits for it; then the downloads land and the staging goes.
  void submit() {
    if (recording) run();
    for (const Download& d : downloads) std::memcpy(d.dst, d.src, d.bytes);
    downloads.clear();
    for (Block& b : staging) free_block(b);
    staging.clear();
  }

  void run() {
    // Host reads after the fence (downloads, cpu fallbacks) see every write.
    barrier(VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT);
    check(api.vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    recording = false;
    pending = 0;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    check(api.vkQueueSubmit(ctx.queue(), 1, &si, fence), "vkQueueSubmit");
    const VkDevice d = ctx.device();
    const auto w = static_cast<VkResult>(host_wait.wait(
        [&](uint64_t timeout) { return api.vkWaitForFences(d, 1, &fence, VK_TRUE, timeout); },
        [&] { return api.vkGetFenceStatus(d, fence); }, kFenceTimeoutNs, VK_NOT_READY,
        VK_TIMEOUT));
    if (w == VK_TIMEOUT)
      fail("vulkan: a submission did not finish in 120 s on '{}'", ctx.info().name);
    check(w, "vkWaitForFences (device lost?)");
    check(api.vkResetFences(ctx.device(), 1, &fence), "vkResetFences");
    check(api.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    check(api.vkResetDescriptorPool(ctx.device(), descriptors, 0), "vkResetDescriptorPool");
  }

  void finish() { submit(); }

  // At least `floats` of scratch, bound whole; a block it outgrows lives until its submission.
  Ref scratch(size_t floats) {
    const size_t bytes = std::max<size_t>(floats, 64) * 4;
    if (scratch_block.bytes < bytes) {
      if (scratch_block.buffer) staging.push_back(scratch_block);
      scratch_block = make_block(std::max(bytes, 2 * scratch_block.bytes),
                                 mapped_mode ? vk::Memory::kMapped : vk::Memory::kDevice);
    }
    return {scratch_block.buffer, 0, 0, VK_WHOLE_SIZE};
  }
  Ref status_ref() const { return {status.buffer, 0, 0, VK_WHOLE_SIZE}; }

  // The first error a shader reported since the last sync, as the cpu backend words it.
  void check_status() {
    const uint32_t code = status_words[0], a = status_words[1], b = status_words[2],
                   bound = status_words[3];
    if (!code) return;
    std::memset(status_words, 0, 16);
    if (code == BERTRT_VK_ERROR_TARGET)
      fail("cross_entropy: row {}: target {} is outside the vocabulary [0, {})", a, int32_t(b),
           bound);
    if (code == BERTRT_VK_ERROR_WINDOW)
      fail(
          "vulkan: position {}: table row {} lies past the {} rows device '{}' binds at once "
          "(maxStorageBufferRange {} bytes): this table is too large for the device",
          a, int32_t(b), bound, ctx.info().name, ctx.limits().maxStorageBufferRange);
    if (code == BERTRT_VK_ERROR_ID)
      fail("embedding_forward_s8: position {}: id {} is outside the table [0, {})", a, int32_t(b),
           bound);
    float x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    if (code == BERTRT_VK_ERROR_RANGE)
      fail(
          "activation observer: batch range [{}, {}] is not finite (NaN or Inf in the "
          "activations?)",
          x, y);
    check_quant_scale("fake_quant_per_row", y, int(a));  // throws: the shader found y bad
    fail("fake_quant_per_row: row {}: scale {} reported invalid by the device", a, y);
  }

  // Partials a reduction of n elements needs in scratch.
  size_t reduce_partials(size_t n) const { return 2 * ((n + group * 16 - 1) / (group * 16) + 1); }

  // OP 0 Σx², 1 Σx (into the double at `out`), 2 min and max (floats at out, out2) of n floats
  // at x: two dispatches, the partials in scratch `s` from element `partial_at` on (the caller
  // sized it: reduce_partials).
  void reduce(uint32_t op, Ref x, size_t n, Ref out, Ref out2, Ref s, uint32_t partial_at) {
    const size_t groups = reduce_pass0(op, x, n, out, out2, s, partial_at);
    reduce_pass1(op, groups, out, out2, s, partial_at);
  }
  // The same over a float array of backend memory larger than one binding reaches: pass 0 a
  // piece at a time (pieces are whole chunks, so the partials are those of one dispatch).
  void reduce(uint32_t op, const char* name, const float* x, size_t n, Ref out, Ref out2) {
    const Ref s = scratch(reduce_partials(n));
    const uint32_t per = op == 2 ? 2 : 1;  // partial floats a chunk
    size_t groups = 0;
    pieces(n, [&](size_t i, size_t k) {
      groups += reduce_pass0(op, resolve(name, "x", x + i, k * 4), k, out, out2, s,
                             uint32_t(i / (group * 16) * per));
    });
    reduce_pass1(op, groups, out, out2, s, 0);
  }
  size_t reduce_pass0(uint32_t op, Ref x, size_t n, Ref out, Ref out2, Ref s, uint32_t partial_at) {
    const uint32_t chunk = group * 16;
    const size_t groups = std::max<size_t>(1, (n + chunk - 1) / chunk);
    vk::ReducePush p{uint32_t(n), x.offset, s.offset + partial_at, out.offset, out2.offset,
                     chunk,       0};
    uint32_t gx, gy;
    fold(groups, &gx, &gy);
    p.groups_x = gx;
    Pipeline& p0 = pipeline("reduce", vk::shader_reduce(), 4, sizeof p, {group, op, 0});
    dispatch(p0, {x, s, out, out2}, &p, sizeof p, gx, gy, 1);
    return groups;
  }
  void reduce_pass1(uint32_t op, size_t groups, Ref out, Ref out2, Ref s, uint32_t partial_at) {
    vk::ReducePush p{uint32_t(groups), 0, s.offset + partial_at, out.offset, out2.offset,
                     group * 16,       1};
    Pipeline& p1 = pipeline("reduce", vk::shader_reduce(), 4, sizeof p, {group, op, 1});
    dispatch(p1, {s, s, out, out2}, &p, sizeof p, 1, 1, 1);
  }

  // Ops over whole arrays (AdamW over every parameter, zeroing and clipping the gradients) run a
  // piece at a time where the array is larger than the device binds at once (phones and
  // lavapipe: 128 MiB; BERT-base's parameters: 440 MB): f(first, count) for each piece. A piece
  // is whole reduction chunks and reaches from any offset (resolve aligns its window down).
  // Callers handle n = 0 themselves.
  template <class F>
  void pieces(size_t n, F&& f) {
    const size_t align = std::max<size_t>(4, ctx.limits().minStorageBufferOffsetAlignment);
    const size_t chunk = size_t(group) * 16;
    const size_t piece =
        std::max(chunk, (size_t(ctx.limits().maxStorageBufferRange) - align) / 4 / chunk * chunk);
    for (size_t i = 0; i < n; i += piece) f(i, std::min(piece, n - i));
  }

  // `groups` workgroups folded into x and y (65535 each).
  static void fold(size_t groups, uint32_t* gx, uint32_t* gy) {
    groups = std::max<size_t>(groups, 1);
    *gx = uint32_t(std::min<size_t>(groups, 65535));
    *gy = uint32_t((groups + *gx - 1) / *gx);
  }

  // A 1-D grid of `n` threads in workgroups of `group`, folded into y beyond 65535 groups.
  void grid(size_t n, uint32_t* gx, uint32_t* gy) const {
    const size_t groups = std::max<size_t>(1, (n + group - 1) / group);
    *gx = uint32_t(std::min<size_t>(groups, 65535));
    *gy = uint32_t((groups + *gx - 1) / *gx);
  }
};

VulkanBackend::VulkanBackend(int device) : impl_(std::make_unique<Impl>(device)), cpu_(0) {}

VulkanBackend::~VulkanBackend() = default;

// Every op but dropout has a shader; those binding more storage buffers than the device allows in
// one shader (Vulkan guarantees 4) run on the cpu fallback instead.
bool VulkanBackend::supports(Op op) const {
  switch (op) {
    case Op::kLayerNormBackward:
      return impl_->binds(8);
    case Op::kLayerNormForward:
    case Op::kGemmU8S8:
    case Op::kLinearU8S8:
      return impl_->binds(6);
    case Op::kCrossEntropy:
    case Op::kFakeQuantPerTensor:
    case Op::kFakeQuantPerRow:
    case Op::kQuantizeU8:
    case Op::kFakeQuantBackward:
    case Op::kFakeQuantObserved:
    case Op::kObserveMinMax:
    case Op::kEmbeddingForwardS8:
    case Op::kPoolTokens:
    case Op::kPoolTokensBackward:
      return impl_->binds(5);
    case Op::kLinearU8S8GeluU8:  // these run as their ops (Backend's default), each a shader
    case Op::kSkipLayerNormForward:
      return false;
    case Op::kDropout:  // no shader yet: Backend's default throws, training runs without dropout
      return false;
    default:
      return op != Op::kCount;
  }
}

const vk::DeviceInfo& VulkanBackend::device_info() const { return impl_->ctx.info(); }

size_t VulkanBackend::pipeline_cache_loaded_bytes() const { return impl_->cache.loaded_bytes(); }

int64_t VulkanBackend::host_waits() const { return impl_->host_wait.waits(); }
bool VulkanBackend::host_waits_poll() const { return impl_->host_wait.polling(); }
void VulkanBackend::force_polling_host_waits() { impl_->host_wait.force_polling(); }

bool VulkanBackend::host_visible() const { return impl_->mapped_mode; }

void* VulkanBackend::alloc(size_t bytes) {
  if (impl_->mapped_mode) {
    Block b = impl_->make_block(bytes, vk::Memory::kMapped);
    impl_->blocks[reinterpret_cast<uintptr_t>(b.mapped)] = b;
    return b.mapped;
  }
  // Device memory has no host address: an inaccessible range of the address space stands for
  // it (a host touch faults at once instead of reading garbage).
  Block b = impl_->make_block(bytes, vk::Memory::kDevice);
  b.reserved_bytes = std::max<size_t>(bytes, 1);
  b.reserved = mmap(nullptr, b.reserved_bytes, PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (b.reserved == MAP_FAILED) {
    b.reserved = nullptr;
    impl_->free_block(b);
    fail("vulkan: out of address space reserving {} bytes", bytes);
  }
  impl_->blocks[reinterpret_cast<uintptr_t>(b.reserved)] = b;
  return b.reserved;
}

void VulkanBackend::release(void* p) {
  if (!p) return;
  auto it = impl_->blocks.find(reinterpret_cast<uintptr_t>(p));
  if (it == impl_->blocks.end()) fail("vulkan: release of {} which alloc() did not return", p);
  impl_->finish();  // recorded work may still use it
  impl_->free_block(it->second);
  impl_->blocks.erase(it);
}

void VulkanBackend::sync() {
  impl_->finish();
  impl_->check_status();
}

void VulkanBackend::upload(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  const auto [buffer, offset] = impl_->locate("upload", "dst", dst, bytes);
  Block s = impl_->make_block(bytes, vk::Memory::kStaging);
  std::memcpy(s.mapped, src, bytes);
  impl_->staging.push_back(s);
  impl_->begin();
  VkBufferCopy region{0, offset, bytes};
  impl_->api.vkCmdCopyBuffer(impl_->cmd, s.buffer, buffer, 1, &region);
  impl_->recorded();
}

void VulkanBackend::download(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  const auto [buffer, offset] = impl_->locate("download", "src", src, bytes);
  if (impl_->mapped_mode) {
    impl_->downloads.push_back({dst, src, bytes});
    return;
  }
  Block st = impl_->make_block(bytes, vk::Memory::kStaging);
  impl_->staging.push_back(st);
  impl_->begin();
  VkBufferCopy region{offset, 0, bytes};
  impl_->api.vkCmdCopyBuffer(impl_->cmd, buffer, st.buffer, 1, &region);
  impl_->downloads.push_back({dst, st.mapped, bytes});  // before recorded(): it may submit
  impl_->recorded();
}

void VulkanBackend::copy(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  const auto [dbuf, doff] = impl_->locate("copy", "dst", dst, bytes);
  const auto [sbuf, soff] = impl_->locate("copy", "src", src, bytes);
  impl_->begin();
  VkBufferCopy region{soff, doff, bytes};
  impl_->api.vkCmdCopyBuffer(impl_->cmd, sbuf, dbuf, 1, &region);
  impl_->recorded();
}

namespace {

void elementwise(VulkanBackend::Impl& im, int op, Ref out, Ref a, Ref b, size_t n, float value) {
  if (n == 0) return;
  vk::ElementwisePush p{uint32_t(n), out.offset, a.offset, b.offset, value, 0};
  uint32_t gx, gy;
  im.grid(n, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl =
      im.pipeline("elementwise", vk::shader_elementwise(), 3, sizeof p, {im.group, uint32_t(op)});
  im.dispatch(pl, {out, a, b}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::fill(float* x, float value, size_t n) {
  if (!n) return;
  impl_->pieces(n, [&](size_t i, size_t k) {
    const Ref r = impl_->resolve("fill", "x", x + i, k * 4);
    elementwise(*impl_, 0, r, r, r, k, value);
  });
}

void VulkanBackend::scale(float* x, float c, size_t n) {
  if (!n) return;
  impl_->pieces(n, [&](size_t i, size_t k) {
    const Ref r = impl_->resolve("scale", "x", x + i, k * 4);
    elementwise(*impl_, 1, r, r, r, k, c);
  });
}

void VulkanBackend::add(float* out, const float* a, const float* b, size_t n) {
  if (!n) return;
  impl_->pieces(n, [&](size_t i, size_t k) {
    elementwise(*impl_, 2, impl_->resolve("add", "out", out + i, k * 4),
                impl_->resolve("add", "a", a + i, k * 4), impl_->resolve("add", "b", b + i, k * 4),
                k, 0);
  });
}

void VulkanBackend::bias_add(float* out, const float* bias, int rows, int cols) {
  const size_t n = size_t(rows) * cols;
  if (!n) return;
  const Ref o = impl_->resolve("bias_add", "out", out, n * 4);
  const Ref b = impl_->resolve("bias_add", "bias", bias, size_t(cols) * 4);
  vk::BiasAddPush p{uint32_t(rows), uint32_t(cols), o.offset, b.offset, 0};
  uint32_t gx, gy;
  impl_->grid(n, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline("bias_add", vk::shader_bias_add(), 2, sizeof p, {impl_->group});
  impl_->dispatch(pl, {o, b}, &p, sizeof p, gx, gy, 1);
}

namespace {
size_t span(int64_t rows, int64_t cols, int64_t ld) {
  return rows > 0 && cols > 0 ? size_t((rows - 1) * ld + cols) : 0;
}
}  // namespace

void VulkanBackend::gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                         const float* A, int lda, const float* B, int ldb, float beta, float* C,
                         int ldc) {
  gemm_batched(1, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0);
}

void VulkanBackend::gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K,
                                 float alpha, const float* A, int lda, int64_t stride_a,
                                 const float* B, int ldb, int64_t stride_b, float beta, float* C,
                                 int ldc, int64_t stride_c) {
  if (batch <= 0 || M <= 0 || N <= 0) return;
  const char* op = batch == 1 ? "gemm" : "gemm_batched";
  auto extent = [&](size_t one, int64_t stride) { return (size_t(batch - 1) * stride + one) * 4; };
  // K = 0 reads nothing from A and B; bind C in their place.
  const Ref c = impl_->resolve(op, "C", C, extent(span(M, N, ldc), stride_c));
  const Ref a = K > 0
                    ? impl_->resolve(op, "A", A,
                                     extent(trans_a ? span(K, M, lda) : span(M, K, lda), stride_a))
                    : c;
  const Ref b = K > 0
                    ? impl_->resolve(op, "B", B,
                                     extent(trans_b ? span(N, K, ldb) : span(K, N, ldb), stride_b))
                    : c;
  vk::GemmPush p{uint32_t(M),
                 uint32_t(N),
                 uint32_t(K),
                 uint32_t(lda),
                 uint32_t(ldb),
                 uint32_t(ldc),
                 a.offset,
                 b.offset,
                 c.offset,
                 uint32_t(stride_a),
                 uint32_t(stride_b),
                 uint32_t(stride_c),
                 uint32_t(trans_a),
                 uint32_t(trans_b),
                 alpha,
                 beta};
  const uint32_t T = impl_->tile;
  Pipeline& pl = impl_->pipeline("gemm", vk::shader_gemm(), 3, sizeof p, {T});
  const uint32_t block = T * 4;  // gemm.comp: R = 4 outputs a thread per dimension
  if (impl_->profile)  // the profile's rows per GEMM shape
    pl.name = fmt::format("gemm {}x{}x{} batch {}{}{}", M, N, K, batch, trans_a ? " Aᵀ" : "",
                          trans_b ? " Bᵀ" : "");
  impl_->dispatch(pl, {a, b, c}, &p, sizeof p, (uint32_t(N) + block - 1) / block,
                  (uint32_t(M) + block - 1) / block, uint32_t(batch));
}

void VulkanBackend::gelu_forward(float* out, const float* inp, size_t n, Gelu kind) {
  if (!n) return;
  const Ref o = impl_->resolve("gelu_forward", "out", out, n * 4);
  const Ref x = impl_->resolve("gelu_forward", "inp", inp, n * 4);
  vk::GeluPush p{uint32_t(n), o.offset, x.offset, kind == Gelu::kErf ? 0u : 1u, 0};
  uint32_t gx, gy;
  impl_->grid(n, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl =
      impl_->pipeline("gelu_forward", vk::shader_gelu_forward(), 2, sizeof p, {impl_->group});
  impl_->dispatch(pl, {o, x}, &p, sizeof p, gx, gy, 1);
}

void VulkanBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                      const float* weight, const float* bias, int rows, int C,
                                      float eps) {
  if (rows <= 0 || C <= 0) return;
  const char* op = "layernorm_forward";
  if (!impl_->binds(6)) {
    on_cpu(op, {{"out", out}, {"inp", inp}});
    cpu_.layernorm_forward(out, mean, rstd, inp, weight, bias, rows, C, eps);
    return;
  }
  const size_t n = size_t(rows) * C * 4;
  const Ref o = impl_->resolve(op, "out", out, n), mu = impl_->resolve(op, "mean", mean, rows * 4),
            rs = impl_->resolve(op, "rstd", rstd, rows * 4), x = impl_->resolve(op, "inp", inp, n),
            w = impl_->resolve(op, "weight", weight, C * 4),
            b = impl_->resolve(op, "bias", bias, C * 4);
  vk::LayerNormPush p{uint32_t(rows), uint32_t(C), o.offset, mu.offset, rs.offset,
                      x.offset,       w.offset,    b.offset, eps,       0};
  uint32_t gx, gy;
  Impl::fold(size_t(rows), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_layernorm_forward(), 6, sizeof p, {impl_->group});
  impl_->dispatch(pl, {o, mu, rs, x, w, b}, &p, sizeof p, gx, gy, 1);
}

void VulkanBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                       const float* inp, const float* weight, const float* mean,
                                       const float* rstd, int rows, int C) {
  if (rows <= 0 || C <= 0) return;
  const char* op = "layernorm_backward";
  if (!impl_->binds(8)) {
    on_cpu(op, {{"dinp", dinp}, {"dout", dout}});
    cpu_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, rows, C);
    return;
  }
  const size_t n = size_t(rows) * C * 4;
  const Ref di = impl_->resolve(op, "dinp", dinp, n),
            dw = impl_->resolve(op, "dweight", dweight, C * 4),
            db = impl_->resolve(op, "dbias", dbias, C * 4), d = impl_->resolve(op, "dout", dout, n),
            x = impl_->resolve(op, "inp", inp, n), w = impl_->resolve(op, "weight", weight, C * 4),
            mu = impl_->resolve(op, "mean", mean, rows * 4),
            rs = impl_->resolve(op, "rstd", rstd, rows * 4);
  vk::LayerNormBackwardPush p{uint32_t(rows), uint32_t(C), di.offset, dw.offset,
                              db.offset,      d.offset,    x.offset,  w.offset,
                              mu.offset,      rs.offset,   0};
  for (uint32_t pass : {0u, 1u}) {
    uint32_t gx, gy;
    if (pass == 0)
      Impl::fold(size_t(rows), &gx, &gy);
    else
      impl_->grid(size_t(C), &gx, &gy);
    p.groups_x = gx;
    Pipeline& pl =
        impl_->pipeline(op, vk::shader_layernorm_backward(), 8, sizeof p, {impl_->group, pass});
    impl_->dispatch(pl, {di, dw, db, d, x, w, mu, rs}, &p, sizeof p, gx, gy, 1);
  }
}

void VulkanBackend::softmax_forward(float* probs, const float* scores, const float* mask, int B,
                                    int NH, int T, float scale) {
  const size_t rows = size_t(B) * NH * T;
  if (!rows || T <= 0) return;
  const char* op = "softmax_forward";
  const Ref pr = impl_->resolve(op, "probs", probs, rows * T * 4),
            sc = impl_->resolve(op, "scores", scores, rows * T * 4);
  const Ref mk = mask ? impl_->resolve(op, "mask", mask, size_t(B) * T * 4) : sc;
  vk::SoftmaxPush p{uint32_t(B), uint32_t(NH),   uint32_t(T), pr.offset, sc.offset,
                    mk.offset,   mask ? 1u : 0u, scale,       0};
  uint32_t gx, gy;
  Impl::fold(rows, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_softmax_forward(), 3, sizeof p, {impl_->group});
  impl_->dispatch(pl, {pr, sc, mk}, &p, sizeof p, gx, gy, 1);
}

void VulkanBackend::adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                               const AdamWHyper& h, int64_t t) {
  if (!n) return;
  const char* op = "adamw_step";
  // The scalars exactly as CpuBackend::adamw_step rounds them.
  const double lr = h.lr, b1d = h.beta1, b2d = h.beta2;
  vk::AdamWPush p{};
  p.bias_correction = h.bias_correction ? 1u : 0u;
  p.b1 = h.beta1, p.b2 = h.beta2;
  p.one_minus_b1 = float(1.0 - b1d), p.one_minus_b2 = float(1.0 - b2d), p.eps = h.eps;
  if (h.bias_correction) {
    p.decay = float(1.0 - lr * h.weight_decay);
    p.step_size = float(lr / (1.0 - std::pow(b1d, double(t))));
    p.bc2_sqrt = float(std::sqrt(1.0 - std::pow(b2d, double(t))));
  }
  p.lr = h.lr, p.wd = h.weight_decay;
  Pipeline& pl = impl_->pipeline(op, vk::shader_adamw_step(), 4, sizeof p, {impl_->group});
  impl_->pieces(n, [&](size_t i, size_t k) {
    const Ref pa = impl_->resolve(op, "param", param + i, k * 4),
              mm = impl_->resolve(op, "m", m + i, k * 4), vv = impl_->resolve(op, "v", v + i, k * 4),
              g = impl_->resolve(op, "grad", grad + i, k * 4);
    p.n = uint32_t(k);
    p.param_offset = pa.offset, p.m_offset = mm.offset, p.v_offset = vv.offset,
    p.grad_offset = g.offset;
    uint32_t gx, gy;
    impl_->grid(k, &gx, &gy);
    p.groups_x = gx;
    impl_->dispatch(pl, {pa, mm, vv, g}, &p, sizeof p, gx, gy, 1);
  });
}

namespace {

void activation(VulkanBackend::Impl& im, int op, Ref out, Ref inp, Ref dout, size_t n,
                uint32_t kind) {
  vk::ActivationPush p{uint32_t(n), out.offset, inp.offset, dout.offset, kind, 0};
  uint32_t gx, gy;
  im.grid(n, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("activation_backward", vk::shader_activation_backward(), 3, sizeof p,
                             {im.group, uint32_t(op)});
  im.dispatch(pl, {out, inp, dout}, &p, sizeof p, gx, gy, 1);
}

void rows_op(VulkanBackend::Impl& im, int op, Ref out, Ref src, Ref ids, int n, int C, int ldd = 0,
             int lds = 0) {
  const size_t total = size_t(n) * C;
  if (!total) return;
  vk::RowsPush p{uint32_t(n), uint32_t(C),   out.offset,    src.offset,
                 ids.offset,  uint32_t(ldd), uint32_t(lds), 0};
  uint32_t gx, gy;
  im.grid(total, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("rows", vk::shader_rows(), 4, sizeof p, {im.group, uint32_t(op)});
  im.dispatch(pl, {out, src, ids, im.status_ref()}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                                  Gelu kind) {
  if (!n) return;
  const char* op = "gelu_backward";
  activation(*impl_, 0, impl_->resolve(op, "dinp", dinp, n * 4),
             impl_->resolve(op, "inp", inp, n * 4), impl_->resolve(op, "dout", dout, n * 4), n,
             kind == Gelu::kErf ? 0u : 1u);
}

void VulkanBackend::tanh_forward(float* out, const float* inp, size_t n) {
  if (!n) return;
  const Ref o = impl_->resolve("tanh_forward", "out", out, n * 4);
  activation(*impl_, 1, o, impl_->resolve("tanh_forward", "inp", inp, n * 4), o, n, 0);
}

void VulkanBackend::tanh_backward(float* dinp, const float* out, const float* dout, size_t n) {
  if (!n) return;
  const char* op = "tanh_backward";
  activation(*impl_, 2, impl_->resolve(op, "dinp", dinp, n * 4),
             impl_->resolve(op, "out", out, n * 4), impl_->resolve(op, "dout", dout, n * 4), n, 0);
}

void VulkanBackend::bias_backward(float* dbias, const float* dout, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const Ref db = impl_->resolve("bias_backward", "dbias", dbias, size_t(cols) * 4);
  const Ref d = impl_->resolve("bias_backward", "dout", dout, size_t(rows) * cols * 4);
  vk::BiasBackwardPush p{uint32_t(rows), uint32_t(cols), db.offset, d.offset, 0};
  uint32_t gx, gy;
  impl_->grid(size_t(cols), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl =
      impl_->pipeline("bias_backward", vk::shader_bias_backward(), 2, sizeof p, {impl_->group});
  impl_->dispatch(pl, {db, d}, &p, sizeof p, gx, gy, 1);
}

void VulkanBackend::softmax_backward(float* dscores, const float* probs, const float* dprobs,
                                     int rows, int T, float scale) {
  if (rows <= 0 || T <= 0) return;
  const char* op = "softmax_backward";
  const size_t n = size_t(rows) * T * 4;
  const Ref ds = impl_->resolve(op, "dscores", dscores, n),
            pr = impl_->resolve(op, "probs", probs, n),
            dp = impl_->resolve(op, "dprobs", dprobs, n);
  vk::SoftmaxBackwardPush p{uint32_t(rows), uint32_t(T), ds.offset, pr.offset, dp.offset, scale, 0};
  uint32_t gx, gy;
  Impl::fold(size_t(rows), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_softmax_backward(), 3, sizeof p, {impl_->group});
  impl_->dispatch(pl, {ds, pr, dp}, &p, sizeof p, gx, gy, 1);
}

// The tables' row counts are not arguments: the first row is resolved, the window reaches the
// block's end or the device's binding limit (ids were checked against the vocabulary on the host
// before the upload; a row past the window is an error at sync()).
void VulkanBackend::embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                                      int C) {
  if (n <= 0 || C <= 0) return;
  const char* op = "embedding_forward";
  rows_op(*impl_, 0, impl_->resolve(op, "out", out, size_t(n) * C * 4),
          impl_->resolve_to_end(op, "table", table), impl_->resolve(op, "ids", ids, size_t(n) * 4),
          n, C);
}

void VulkanBackend::gather_rows(float* out, const float* src, const int32_t* rows, int n, int C) {
  if (n <= 0 || C <= 0) return;
  const char* op = "gather_rows";
  rows_op(*impl_, 1, impl_->resolve(op, "out", out, size_t(n) * C * 4),
          impl_->resolve_to_end(op, "src", src), impl_->resolve(op, "rows", rows, size_t(n) * 4), n,
          C);
}

void VulkanBackend::copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const size_t d = (size_t(rows - 1) * ldd + cols) * 4, s = (size_t(rows - 1) * lds + cols) * 4;
  const Ref sr = impl_->resolve("copy_2d", "src", src, s);
  rows_op(*impl_, 2, impl_->resolve("copy_2d", "dst", dst, d), sr, sr, rows, cols, ldd, lds);
}

// --- the cpu fallback ----------------------------------------------------------------------------

void VulkanBackend::on_cpu(const char* op,
                           std::initializer_list<std::pair<const char*, const void*>> args) {
  for (const auto& [name, p] : args)
    if (p) impl_->resolve(op, name, p, 1, 1);
  if (!impl_->mapped_mode)
    fail(
        "vulkan: {} needs more storage buffers than device '{}' binds, and its cpu fallback "
        "needs mapped memory (BERTRT_VULKAN_MEMORY=mapped)",
        op, impl_->ctx.info().name);
  impl_->finish();
  if (fallbacks_.insert(op).second)
    std::fprintf(stderr, "bertrt: vulkan: %s runs on the cpu backend (no Vulkan shader yet)\n", op);
}

// --- reductions and losses ----------------------------------------------------------------------

void VulkanBackend::sum_squares(double* out, const float* x, size_t n) {
  const char* op = "sum_squares";
  const Ref o = impl_->resolve(op, "out", out, 8);
  if (!n) return impl_->reduce(0, o, 0, o, o, impl_->scratch(impl_->reduce_partials(0)), 0);
  impl_->reduce(0, op, x, n, o, o);
}

void VulkanBackend::min_max(float* mn, float* mx, const float* x, size_t n) {
  if (n == 0) fail("min_max: empty input");
  const char* op = "min_max";
  const Ref lo = impl_->resolve(op, "mn", mn, 4), hi = impl_->resolve(op, "mx", mx, 4);
  impl_->reduce(2, op, x, n, lo, hi);
}

namespace {

void row_reduce(VulkanBackend::Impl& im, uint32_t op, Ref out, Ref x, int rows, int cols,
                float half_range) {
  vk::RowReducePush p{uint32_t(rows), uint32_t(cols), out.offset, x.offset, half_range, 0};
  uint32_t gx, gy;
  VulkanBackend::Impl::fold(size_t(rows), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("row_reduce", vk::shader_row_reduce(), 2, sizeof p, {im.group, op});
  im.dispatch(pl, {out, x}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::argmax_rows(int32_t* out, const float* x, int rows, int cols) {
  if (rows <= 0) return;
  const char* op = "argmax_rows";
  const Ref o = impl_->resolve(op, "out", out, size_t(rows) * 4);
  row_reduce(*impl_, 0, o, cols > 0 ? impl_->resolve(op, "x", x, size_t(rows) * cols * 4) : o, rows,
             cols, 0);
}

void VulkanBackend::absmax_rows(float* out, const float* x, int rows, int cols) {
  if (rows <= 0) return;
  const char* op = "absmax_rows";
  const Ref o = impl_->resolve(op, "out", out, size_t(rows) * 4);
  row_reduce(*impl_, 1, o, cols > 0 ? impl_->resolve(op, "x", x, size_t(rows) * cols * 4) : o, rows,
             cols, 0);
}

void VulkanBackend::symmetric_scale_rows(float* scale, const float* x, int rows, int cols, int qmin,
                                         int qmax) {
  if (rows <= 0) return;
  const char* op = "symmetric_scale_rows";
  const Ref o = impl_->resolve(op, "scale", scale, size_t(rows) * 4);
  row_reduce(*impl_, 2, o, cols > 0 ? impl_->resolve(op, "x", x, size_t(rows) * cols * 4) : o, rows,
             cols, static_cast<float>(qmax - qmin) / 2.0f);  // as symmetric_scale_rule
}

void VulkanBackend::cross_entropy(float* dlogits, double* loss_sum, const float* logits,
                                  const int32_t* targets, int rows, int V, float grad_scale) {
  const char* op = "cross_entropy";
  const Ref sum = impl_->resolve(op, "loss_sum", loss_sum, 8);
  if (rows <= 0 || V <= 0 || !impl_->binds(5)) {
    on_cpu(op, {{"dlogits", dlogits}, {"loss_sum", loss_sum}, {"logits", logits}});
    cpu_.cross_entropy(dlogits, loss_sum, logits, targets, rows, V, grad_scale);
    return;
  }
  const size_t n = size_t(rows) * V * 4;
  const Ref z = impl_->resolve(op, "logits", logits, n),
            t = impl_->resolve(op, "targets", targets, size_t(rows) * 4);
  const Ref dz = dlogits ? impl_->resolve(op, "dlogits", dlogits, n) : z;
  // Scratch: the row losses, then the reduction's partials.
  const Ref s = impl_->scratch(size_t(rows) + impl_->reduce_partials(size_t(rows)));
  vk::CrossEntropyPush p{uint32_t(rows), uint32_t(V),       dz.offset,  z.offset, t.offset,
                         s.offset,       dlogits ? 1u : 0u, grad_scale, 0};
  uint32_t gx, gy;
  Impl::fold(size_t(rows), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_cross_entropy(), 5, sizeof p, {impl_->group});
  impl_->dispatch(pl, {dz, z, t, s, impl_->status_ref()}, &p, sizeof p, gx, gy, 1);
  impl_->reduce(1, s, size_t(rows), sum, sum, s, uint32_t(rows));
}

void VulkanBackend::mse_loss(float* dpred, double* loss_sum, const float* pred, const float* target,
                             int n, float weight) {
  const char* op = "mse_loss";
  const Ref sum = impl_->resolve(op, "loss_sum", loss_sum, 8);
  const Ref s =
      impl_->scratch(size_t(std::max(n, 0)) + impl_->reduce_partials(size_t(std::max(n, 0))));
  if (n > 0) {
    const Ref pr = impl_->resolve(op, "pred", pred, size_t(n) * 4),
              tg = impl_->resolve(op, "target", target, size_t(n) * 4);
    const Ref dp = dpred ? impl_->resolve(op, "dpred", dpred, size_t(n) * 4) : pr;
    vk::MsePush p{uint32_t(n), dp.offset,       pr.offset, tg.offset,
                  s.offset,    dpred ? 1u : 0u, weight,    0};
    uint32_t gx, gy;
    impl_->grid(size_t(n), &gx, &gy);
    p.groups_x = gx;
    Pipeline& pl = impl_->pipeline(op, vk::shader_mse_loss(), 4, sizeof p, {impl_->group});
    impl_->dispatch(pl, {dp, pr, tg, s}, &p, sizeof p, gx, gy, 1);
  }
  impl_->reduce(1, s, size_t(std::max(n, 0)), sum, sum, s, uint32_t(std::max(n, 0)));
}

// --- the sentence-embedding head and CoSENT -----------------------------------------------------

namespace {

void pool(VulkanBackend::Impl& im, int backward, Ref out, Ref hidden, Ref mask, Ref prompt,
          Ref dout, int B, int T, int H, int ld, Pooling mode) {
  vk::PoolPush p{uint32_t(B),   uint32_t(T),      uint32_t(H),   out.offset,
                 hidden.offset, mask.offset,      prompt.offset, dout.offset,
                 uint32_t(ld),  uint32_t(mode),   0};
  uint32_t gx, gy;
  im.grid(size_t(B) * H, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("pool_tokens", vk::shader_pool_tokens(), 5, sizeof p,
                             {im.group, uint32_t(backward)});
  im.dispatch(pl, {out, hidden, mask, prompt, dout}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                                const int32_t* prompt_length, int B, int T, int H, Pooling mode) {
  const char* op = "pool_tokens";
  if (B <= 0 || T <= 0 || H <= 0) return;
  if (!impl_->binds(5)) {
    on_cpu(op, {{"out", out}, {"hidden", hidden}, {"mask", mask}, {"prompt_length", prompt_length}});
    cpu_.pool_tokens(out, ldo, hidden, mask, prompt_length, B, T, H, mode);
    return;
  }
  const Ref o = impl_->resolve(op, "out", out, (size_t(B - 1) * ldo + H) * 4);
  pool(*impl_, 0, o, impl_->resolve(op, "hidden", hidden, size_t(B) * T * H * 4),
       impl_->resolve(op, "mask", mask, size_t(B) * T * 4),
       impl_->resolve(op, "prompt_length", prompt_length, size_t(B) * 4), o, B, T, H, ldo, mode);
}

void VulkanBackend::pool_tokens_backward(float* dhidden, const float* dout, int ldd,
                                         const float* hidden, const int32_t* mask,
                                         const int32_t* prompt_length, int B, int T, int H,
                                         Pooling mode) {
  const char* op = "pool_tokens_backward";
  if (B <= 0 || T <= 0 || H <= 0) return;
  if (!impl_->binds(5)) {
    on_cpu(op, {{"dhidden", dhidden}, {"dout", dout}, {"hidden", hidden}, {"mask", mask},
                {"prompt_length", prompt_length}});
    cpu_.pool_tokens_backward(dhidden, dout, ldd, hidden, mask, prompt_length, B, T, H, mode);
    return;
  }
  const size_t n = size_t(B) * T * H * 4;
  pool(*impl_, 1, impl_->resolve(op, "dhidden", dhidden, n), impl_->resolve(op, "hidden", hidden, n),
       impl_->resolve(op, "mask", mask, size_t(B) * T * 4),
       impl_->resolve(op, "prompt_length", prompt_length, size_t(B) * 4),
       impl_->resolve(op, "dout", dout, (size_t(B - 1) * ldd + H) * 4), B, T, H, ldd, mode);
}

namespace {

void l2_normalize(VulkanBackend::Impl& im, int backward, Ref out, int ld_out, Ref x, int ldx,
                  Ref dy, int rows, int cols) {
  vk::L2NormalizePush p{uint32_t(rows), uint32_t(cols), out.offset, uint32_t(ld_out),
                        x.offset,       uint32_t(ldx),  dy.offset,  0};
  uint32_t gx, gy;
  VulkanBackend::Impl::fold(size_t(rows), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("l2_normalize", vk::shader_l2_normalize(), 3, sizeof p,
                             {im.group, uint32_t(backward)});
  im.dispatch(pl, {out, x, dy}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const char* op = "l2_normalize_rows";
  const Ref o = impl_->resolve(op, "y", y, size_t(rows) * cols * 4);
  l2_normalize(*impl_, 0, o, cols, impl_->resolve(op, "x", x, (size_t(rows - 1) * ldx + cols) * 4),
               ldx, o, rows, cols);
}

void VulkanBackend::l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx,
                                               const float* dy, int rows, int cols) {
  if (rows <= 0 || cols <= 0) return;
  const char* op = "l2_normalize_rows_backward";
  l2_normalize(*impl_, 1, impl_->resolve(op, "dx", dx, (size_t(rows - 1) * lddx + cols) * 4), lddx,
               impl_->resolve(op, "x", x, (size_t(rows - 1) * ldx + cols) * 4), ldx,
               impl_->resolve(op, "dy", dy, size_t(rows) * cols * 4), rows, cols);
}

void VulkanBackend::cosent_loss(float* dcos, double* loss, const float* cos, const float* labels,
                                int n, float scale, float grad_scale) {
  const char* op = "cosent_loss";
  const Ref sum = impl_->resolve(op, "loss", loss, 8);
  // Scratch: the float loss, then the reduction's partials (which turns it into the double).
  const Ref s = impl_->scratch(1 + impl_->reduce_partials(1));
  // n = 0 runs too (the loss is log 1 = 0): the scratch stands in for the empty arrays.
  const Ref c = n > 0 ? impl_->resolve(op, "cos", cos, size_t(n) * 4) : s,
            l = n > 0 ? impl_->resolve(op, "labels", labels, size_t(n) * 4) : s;
  const Ref d = dcos && n > 0 ? impl_->resolve(op, "dcos", dcos, size_t(n) * 4) : c;
  vk::CosentPush p{uint32_t(std::max(n, 0)), d.offset, c.offset, l.offset, s.offset,
                   dcos ? 1u : 0u,           scale,    grad_scale};
  Pipeline& pl = impl_->pipeline(op, vk::shader_cosent_loss(), 4, sizeof p, {impl_->group});
  impl_->dispatch(pl, {d, c, l, s}, &p, sizeof p, 1, 1, 1);
  impl_->reduce(1, s, 1, sum, sum, s, 1);
}

void VulkanBackend::embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                                       int C) {
  if (n <= 0 || C <= 0) return;
  const char* op = "embedding_backward";
  const Ref dt = impl_->resolve_to_end(op, "dtable", dtable),
            id = impl_->resolve(op, "ids", ids, size_t(n) * 4),
            d = impl_->resolve(op, "dout", dout, size_t(n) * C * 4);
  vk::EmbeddingBackwardPush p{uint32_t(n), uint32_t(C), dt.offset, id.offset, d.offset, 0};
  uint32_t gx, gy;
  Impl::fold(size_t(n), &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_embedding_backward(), 4, sizeof p, {impl_->group});
  impl_->dispatch(pl, {dt, id, d, impl_->status_ref()}, &p, sizeof p, gx, gy, 1);
}

// --- quantization ----------------------------------------------------------------------------

namespace {



// OP 0–2 run one thread per 32-bit word of the byte output (mask or q), OP 3 one per element.
void fake_quant_op(VulkanBackend::Impl& im, uint32_t op, vk::FakeQuantPush p, Ref out, Ref bytes,
                   Ref x, Ref scale) {
  const bool words = op != 3 && op != 5;
  const size_t threads = op == 5 ? 1
                         : words ? ((p.has_mask || op == 2 ? p.bytes_offset % 4 : 0) + p.n + 3) / 4
                                 : p.n;
  uint32_t gx, gy;
  im.grid(threads, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = im.pipeline("fake_quant", vk::shader_fake_quant(), 5, sizeof p, {im.group, op});
  im.dispatch(pl, {out, bytes, x, scale, im.status_ref()}, &p, sizeof p, gx, gy, 1);
}

}  // namespace

void VulkanBackend::fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n,
                                          float scale, int zero_point, int qmin, int qmax) {
  const char* op = "fake_quant_per_tensor";
  check_quant_scale(op, scale, 0);
  if (!n) return;
  if (!impl_->binds(5)) {
    on_cpu(op, {{"out", out}, {"mask", mask}, {"x", x}});
    cpu_.fake_quant_per_tensor(out, mask, x, n, scale, zero_point, qmin, qmax);
    return;
  }
  const Ref o = impl_->resolve(op, "out", out, n * 4), xs = impl_->resolve(op, "x", x, n * 4);
  const Ref m = mask ? impl_->resolve(op, "mask", mask, n, 1) : o;
  vk::FakeQuantPush p{uint32_t(n), 1,    o.offset,       mask ? m.offset : 0u,
                      xs.offset,   0,    mask ? 1u : 0u, scale,
                      zero_point,  qmin, qmax,           0};
  fake_quant_op(*impl_, 0, p, o, m, xs, xs);
}

void VulkanBackend::fake_quant_observed(float* out, uint8_t* mask, const float* x, size_t n,
                                        const float* range, int qmin, int qmax) {
  if (!n) return;
  const char* op = "fake_quant_observed";
  if (!impl_->binds(5)) {
    on_cpu(op, {{"out", out}, {"mask", mask}, {"x", x}, {"range", range}});
    cpu_.fake_quant_observed(out, mask, x, n, range, qmin, qmax);
    return;
  }
  const Ref o = impl_->resolve(op, "out", out, n * 4), xs = impl_->resolve(op, "x", x, n * 4),
            r = impl_->resolve(op, "range", range, 8);
  const Ref m = mask ? impl_->resolve(op, "mask", mask, n, 1) : o;
  vk::FakeQuantPush p{uint32_t(n), 1,     o.offset, mask ? m.offset : 0u, xs.offset, r.offset,
                      mask ? 1u : 0u, 1.0f,  0,        qmin,                 qmax,      0};
  fake_quant_op(*impl_, 4, p, o, m, xs, r);
}

void VulkanBackend::observe_min_max(float* range, const float* batch, int parts, bool first,
                                    float momentum) {
  const char* op = "observe_min_max";
  if (!impl_->binds(5)) {
    on_cpu(op, {{"range", range}, {"batch", batch}});
    cpu_.observe_min_max(range, batch, parts, first, momentum);
    return;
  }
  const Ref r = impl_->resolve(op, "range", range, 8),
            b = impl_->resolve(op, "batch", batch, size_t(parts) * 8);
  vk::FakeQuantPush p{uint32_t(parts), first ? 1u : 0u, r.offset, 0, b.offset, 0, 0, momentum,
                      0,               0,               0,        0};
  fake_quant_op(*impl_, 5, p, r, r, b, r);
}

void VulkanBackend::fake_quant_per_row(float* out, uint8_t* mask, const float* x,
                                       const float* scale, int rows, int cols, int qmin, int qmax) {
  if (rows <= 0 || cols <= 0) return;
  const char* op = "fake_quant_per_row";
  if (!impl_->binds(5)) {
    on_cpu(op, {{"out", out}, {"mask", mask}, {"x", x}, {"scale", scale}});
    cpu_.fake_quant_per_row(out, mask, x, scale, rows, cols, qmin, qmax);
    return;
  }
  const size_t n = size_t(rows) * cols;
  const Ref o = impl_->resolve(op, "out", out, n * 4), xs = impl_->resolve(op, "x", x, n * 4),
            sc = impl_->resolve(op, "scale", scale, size_t(rows) * 4);
  const Ref m = mask ? impl_->resolve(op, "mask", mask, n, 1) : o;
  vk::FakeQuantPush p{uint32_t(n), uint32_t(cols), o.offset,       mask ? m.offset : 0u,
                      xs.offset,   sc.offset,      mask ? 1u : 0u, 1.0f,
                      0,           qmin,           qmax,           0};
  fake_quant_op(*impl_, 1, p, o, m, xs, sc);
}

void VulkanBackend::fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout,
                                        size_t n) {
  if (!n) return;
  const char* op = "fake_quant_backward";
  if (!impl_->binds(5)) {
    on_cpu(op, {{"dinp", dinp}, {"mask", mask}, {"dout", dout}});
    cpu_.fake_quant_backward(dinp, mask, dout, n);
    return;
  }
  const Ref di = impl_->resolve(op, "dinp", dinp, n * 4),
            d = impl_->resolve(op, "dout", dout, n * 4), m = impl_->resolve(op, "mask", mask, n, 1);
  vk::FakeQuantPush p{uint32_t(n), 1, di.offset, m.offset, d.offset, 0, 1, 1.0f, 0, 0, 0, 0};
  fake_quant_op(*impl_, 3, p, di, m, d, d);
}

void VulkanBackend::quantize_u8(uint8_t* q, const float* x, size_t n, float scale, int zero_point) {
  const char* op = "quantize_u8";
  check_quant_scale(op, scale, 0);
  if (!n) return;
  if (!impl_->binds(5)) {
    on_cpu(op, {{"q", q}, {"x", x}});
    cpu_.quantize_u8(q, x, n, scale, zero_point);
    return;
  }
  const Ref qs = impl_->resolve(op, "q", q, n, 1), xs = impl_->resolve(op, "x", x, n * 4);
  vk::FakeQuantPush p{uint32_t(n), 1,     xs.offset,  qs.offset, xs.offset, 0,
                      0,           scale, zero_point, 0,         255,       0};
  fake_quant_op(*impl_, 2, p, xs, qs, xs, xs);
}

namespace {

void q8_gemm(VulkanBackend::Impl& im, uint32_t op, vk::Q8GemmPush p, Ref a, Ref b, Ref c, Ref ws,
             Ref wsum, Ref bias) {
  const uint32_t T = im.tile;
  Pipeline& pl = im.pipeline("gemm_u8s8", vk::shader_gemm_u8s8(), 6, sizeof p, {T, op});
  im.dispatch(pl, {a, b, c, ws, wsum, bias}, &p, sizeof p, (p.N + T - 1) / T, (p.M + T - 1) / T, 1);
}

}  // namespace

void VulkanBackend::gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda, const int8_t* B,
                                  int ldb, int32_t* C, int ldc) {
  const char* op = "gemm_u8s8_s32";
  check_q8_k(op, K);
  if (M <= 0 || N <= 0) return;
  if (!impl_->binds(6)) {
    on_cpu(op, {{"A", A}, {"B", B}, {"C", C}});
    cpu_.gemm_u8s8_s32(M, N, K, A, lda, B, ldb, C, ldc);
    return;
  }
  const Ref c = impl_->resolve(op, "C", C, span(M, N, ldc) * 4);
  const Ref a = K > 0 ? impl_->resolve(op, "A", A, span(M, K, lda), 1) : c;
  const Ref b = K > 0 ? impl_->resolve(op, "B", B, span(N, K, ldb), 1) : c;
  vk::Q8GemmPush p{uint32_t(M),
                   uint32_t(N),
                   uint32_t(K),
                   uint32_t(lda),
                   uint32_t(ldb),
                   uint32_t(ldc),
                   a.offset,
                   b.offset,
                   c.offset,
                   0,
                   0,
                   0,
                   0,
                   0.0f,
                   0};
  q8_gemm(*impl_, 0, p, a, b, c, c, c, c);
}

void VulkanBackend::linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                                int a_zero_point, const int8_t* W, const float* w_scale,
                                const int32_t* w_sum, const float* bias, int M, int N, int K) {
  const char* op = "linear_u8s8";
  check_q8_k(op, K);
  if (M <= 0 || N <= 0) return;
  if (!impl_->binds(6)) {
    on_cpu(
        op,
        {{"out", out}, {"A", A}, {"W", W}, {"w_scale", w_scale}, {"w_sum", w_sum}, {"bias", bias}});
    cpu_.linear_u8s8(out, ldo, A, lda, a_scale, a_zero_point, W, w_scale, w_sum, bias, M, N, K);
    return;
  }
  const Ref o = impl_->resolve(op, "out", out, span(M, N, ldo) * 4);
  const Ref a = K > 0 ? impl_->resolve(op, "A", A, span(M, K, lda), 1) : o;
  const Ref w = K > 0 ? impl_->resolve(op, "W", W, size_t(N) * K, 1) : o;
  const Ref ws = impl_->resolve(op, "w_scale", w_scale, size_t(N) * 4),
            wsum = impl_->resolve(op, "w_sum", w_sum, size_t(N) * 4);
  const Ref b = bias ? impl_->resolve(op, "bias", bias, size_t(N) * 4) : ws;
  vk::Q8GemmPush p{uint32_t(M),   uint32_t(N), uint32_t(K),    uint32_t(lda), uint32_t(K),
                   uint32_t(ldo), a.offset,    w.offset,       o.offset,      ws.offset,
                   wsum.offset,   b.offset,    bias ? 1u : 0u, a_scale,       a_zero_point};
  q8_gemm(*impl_, 1, p, a, w, o, ws, wsum, b);
}

void VulkanBackend::embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q,
                                         const float* scale, int n, int C, int V) {
  if (n <= 0 || C <= 0) return;
  const char* op = "embedding_forward_s8";
  if (!impl_->binds(5)) {
    on_cpu(op, {{"out", out}, {"ids", ids}, {"q", q}, {"scale", scale}});
    cpu_.embedding_forward_s8(out, ids, q, scale, n, C, V);
    return;
  }
  const Ref o = impl_->resolve(op, "out", out, size_t(n) * C * 4),
            id = impl_->resolve(op, "ids", ids, size_t(n) * 4),
            qs = impl_->resolve(op, "q", q, size_t(V) * C, 1),
            sc = impl_->resolve(op, "scale", scale, size_t(V) * 4);
  vk::EmbeddingS8Push p{uint32_t(n), uint32_t(C), uint32_t(V), o.offset,
                        id.offset,   qs.offset,   sc.offset,   0};
  uint32_t gx, gy;
  impl_->grid(size_t(n) * C, &gx, &gy);
  p.groups_x = gx;
  Pipeline& pl = impl_->pipeline(op, vk::shader_embedding_s8(), 5, sizeof p, {impl_->group});
  impl_->dispatch(pl, {o, id, qs, sc, impl_->status_ref()}, &p, sizeof p, gx, gy, 1);
}

std::vector<std::string> vulkan_device_lines() {
  std::vector<std::string> out;
  for (const vk::DeviceInfo& d : vk::list_devices())
    out.push_back(fmt::format(
        "{}: {} ({}, driver {}, Vulkan {}.{}): subgroup {}, shared memory {} KiB, workgroup "
        "{} threads, storage buffer range {} MiB, device-local {} MiB, {} memory",
        d.index, d.name, d.type, d.driver, VK_API_VERSION_MAJOR(d.api_version),
        VK_API_VERSION_MINOR(d.api_version), d.subgroup_size, d.max_shared_memory / 1024,
        d.max_workgroup_invocations, d.max_storage_buffer_range >> 20, d.device_local_bytes >> 20,
        d.unified_memory ? "unified" : "discrete"));
  return out;
}

}  // namespace bertrt
