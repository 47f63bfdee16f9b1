// The Vulkan compute backend (design: docs/explanation/vulkan.md).
//
// Memory: every Backend::alloc block is one VkBuffer. On unified memory (a DEVICE_LOCAL |
// HOST_VISIBLE type on the largest device-local heap: phones, integrated GPUs, lavapipe) it is
// mapped for the life of the block and alloc() returns the mapped address. On a discrete GPU it
// is DEVICE_LOCAL only, and alloc() returns an address range reserved without access that stands
// for it; upload/download go through staging buffers (BERTRT_VULKAN_MEMORY=mapped|device
// overrides the choice: the tests run the device path on lavapipe). Ops resolve pointer
// arguments to (buffer, offset) through an interval map — an argument that does not resolve is
// an error naming the op and the argument. Ops are recorded into a command buffer with a barrier
// after each dispatch, and submitted every kMaxBatch dispatches or at sync() (bounded, so drivers
// never see one endless submission); downloads land after the fence wait.
//
// Every op has a shader (shaders/*.comp), forward, backward, optimizer, losses, reductions and the
// int8 ops; fp32 accumulation, reductions as fp32 trees into the double outputs, the quantization
// rules bit for bit (correctly rounded division, no fused multiply-add). Errors a shader finds (a
// target or id out of range, a bad scale) surface at sync(). An op whose shader binds more
// storage buffers than the device allows runs on the cpu backend over the mapped memory, with a
// one-line notice the first time. A device without a host-visible memory type (none known) is
// refused at start-up.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/vulkan/vk_context.h"

namespace bertrt {

class VulkanBackend : public Backend {
 public:
  // device < 0: BERTRT_VULKAN_DEVICE, else 0. Throws bertrt::Error when Vulkan is unavailable.
  explicit VulkanBackend(int device = -1);
  ~VulkanBackend() override;
  const char* name() const override { return "vulkan"; }
  bool supports(Op op) const override;
  // attention_forward_varlen is the default's chain of dispatches per sequence here: padded
  // batches run fewer, larger dispatches.
  bool packed_attention() const override { return false; }
  const vk::DeviceInfo& device_info() const;
  // Ops that ran on the cpu fallback so far (names), for tests and the notice.
  const std::set<std::string>& fallbacks() const { return fallbacks_; }
  // Bytes of pipeline cache read from disk at start-up (vk_pipeline_cache.h); 0: none.
  size_t pipeline_cache_loaded_bytes() const;
  // The host's waits for submissions (vk_host_wait.h): how many so far, and whether they poll
  // between sleeps (the driver's own wait was seen spinning, or forced for tests).
  int64_t host_waits() const;
  bool host_waits_poll() const;
  void force_polling_host_waits();
  struct Impl;  // device, arena, pipelines, recording (vulkan_backend.cpp)

  void* alloc(size_t bytes) override;
  void release(void* p) override;
  bool host_visible() const override;
  bool accepts_host_pointers() const override { return false; }
  void sync() override;
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;

  void fill(float* x, float value, size_t n) override;
  void scale(float* x, float c, size_t n) override;
  void add(float* out, const float* a, const float* b, size_t n) override;
  void bias_add(float* out, const float* bias, int rows, int cols) override;
  void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override;
  void gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                    const float* A, int lda, int64_t stride_a, const float* B, int ldb,
                    int64_t stride_b, float beta, float* C, int ldc, int64_t stride_c) override;

  void gelu_forward(float* out, const float* inp, size_t n, Gelu kind) override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int rows, int C,
                         float eps) override;
  void softmax_forward(float* probs, const float* scores, const float* mask, int B, int NH, int T,
                       float scale) override;
  void adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                  const AdamWHyper& h, int64_t t) override;

  void copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) override;
  void gather_rows(float* out, const float* src, const int32_t* rows, int n, int C) override;
  void bias_backward(float* dbias, const float* dout, int rows, int cols) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                     Gelu kind) override;
  void tanh_forward(float* out, const float* inp, size_t n) override;
  void tanh_backward(float* dinp, const float* out, const float* dout, size_t n) override;
  void softmax_backward(float* dscores, const float* probs, const float* dprobs, int rows, int T,
                        float scale) override;
  void embedding_forward(float* out, const int32_t* ids, const float* table, int n, int C) override;

  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int rows, int C) override;
  void copy(void* dst, const void* src, size_t bytes) override;  // vkCmdCopyBuffer

  // --- reductions, losses and quantization ------------------------------------------------------
  void sum_squares(double* out, const float* x, size_t n) override;
  void argmax_rows(int32_t* out, const float* x, int rows, int cols) override;
  void mse_loss(float* dpred, double* loss_sum, const float* pred, const float* target, int n,
                float weight) override;
  void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                          int C) override;
  void cross_entropy(float* dlogits, double* loss_sum, const float* logits, const int32_t* targets,
                     int rows, int V, float grad_scale) override;
  void min_max(float* mn, float* mx, const float* x, size_t n) override;
  void absmax_rows(float* out, const float* x, int rows, int cols) override;
  void symmetric_scale_rows(float* scale, const float* x, int rows, int cols, int qmin,
                            int qmax) override;
  void fake_quant_per_tensor(float* out, uint8_t* mask, const float* x, size_t n, float scale,
                             int zero_point, int qmin, int qmax) override;
  void fake_quant_per_row(float* out, uint8_t* mask, const float* x, const float* scale, int rows,
                          int cols, int qmin, int qmax) override;
  void fake_quant_backward(float* dinp, const uint8_t* mask, const float* dout, size_t n) override;
  void quantize_u8(uint8_t* q, const float* x, size_t n, float scale, int zero_point) override;
  void gemm_u8s8_s32(int M, int N, int K, const uint8_t* A, int lda, const int8_t* B, int ldb,
                     int32_t* C, int ldc) override;
  void linear_u8s8(float* out, int ldo, const uint8_t* A, int lda, float a_scale, int a_zero_point,
                   const int8_t* W, const float* w_scale, const int32_t* w_sum, const float* bias,
                   int M, int N, int K) override;
  void embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q, const float* scale,
                            int n, int C, int V) override;
  void observe_min_max(float* range, const float* batch, int parts, bool first,
                       float momentum) override;
  void fake_quant_observed(float* out, uint8_t* mask, const float* x, size_t n, const float* range,
                           int qmin, int qmax) override;

  void pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                   const int32_t* prompt_length, int B, int T, int H, Pooling mode) override;
  void pool_tokens_backward(float* dhidden, const float* dout, int ldd, const float* hidden,
                            const int32_t* mask, const int32_t* prompt_length, int B, int T, int H,
                            Pooling mode) override;
  void l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) override;
  void l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx, const float* dy,
                                  int rows, int cols) override;
  void cosent_loss(float* dcos, double* loss, const float* cos, const float* labels, int n,
                   float scale, float grad_scale) override;

 private:
  std::unique_ptr<Impl> impl_;
  CpuBackend cpu_;  // the fallback, on mapped memory
  std::set<std::string> fallbacks_;
  // Syncs, prints the notice once per op, checks the arguments resolve; then the caller runs
  // the op on cpu_.
  void on_cpu(const char* op, std::initializer_list<std::pair<const char*, const void*>> args);
};

// `bertrt info --devices`: one line per device with its limits ("no Vulkan device: <why>").
std::vector<std::string> vulkan_device_lines();

}  // namespace bertrt
