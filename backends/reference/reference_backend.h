// The scalar oracle: every op of backends/backend.h written as the plain math, accumulating in
// double where that makes the result meaningfully more exact (dot products, LayerNorm statistics,
// softmax and log-sum-exp sums). Other backends derive from it, so an op they do not override
// falls back to this code; their tests compare against it (tests/unit/ops_test.cpp).
//
// Clarity over speed: loops are written in the order of the formula in backend.h.
#pragma once

#include "backends/backend.h"

namespace bertrt {

class ReferenceBackend : public Backend {
 public:
  const char* name() const override { return "reference"; }
  bool supports(Op op) const override { return op != Op::kCount; }

  // Host memory (64-byte aligned), ops run at once: sync() has nothing to wait for.
  void* alloc(size_t bytes) override;
  void release(void* p) override;
  bool host_visible() const override { return true; }
  bool accepts_host_pointers() const override { return true; }
  void sync() override {}
  void upload(void* dst, const void* src, size_t bytes) override;
  void download(void* dst, const void* src, size_t bytes) override;

  void fill(float* x, float value, size_t n) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void copy_2d(float* dst, int ldd, const float* src, int lds, int rows, int cols) override;
  void gather_rows(float* out, const float* src, const int32_t* rows, int n, int C) override;
  void scale(float* x, float c, size_t n) override;
  void sum_squares(double* out, const float* x, size_t n) override;
  void argmax_rows(int32_t* out, const float* x, int rows, int cols) override;
  void mse_loss(float* dpred, double* loss_sum, const float* pred, const float* target, int n,
                float weight) override;

  void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override;
  void gemm_batched(int batch, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
                    const float* A, int lda, int64_t stride_a, const float* B, int ldb,
                    int64_t stride_b, float beta, float* C, int ldc, int64_t stride_c) override;

  void add(float* out, const float* a, const float* b, size_t n) override;
  void bias_add(float* out, const float* bias, int rows, int cols) override;
  void bias_backward(float* dbias, const float* dout, int rows, int cols) override;

  void gelu_forward(float* out, const float* inp, size_t n, Gelu kind) override;
  void dropout(float* x, size_t n, float p, uint64_t seed) override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n,
                     Gelu kind) override;
  void tanh_forward(float* out, const float* inp, size_t n) override;
  void tanh_backward(float* dinp, const float* out, const float* dout, size_t n) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int rows, int C,
                         float eps) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int rows, int C) override;

  void softmax_forward(float* probs, const float* scores, const float* mask, int B, int NH, int T,
                       float scale) override;
  void softmax_backward(float* dscores, const float* probs, const float* dprobs, int rows, int T,
                        float scale) override;

  void embedding_forward(float* out, const int32_t* ids, const float* table, int n,
                         int C) override;
  void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                          int C) override;

  void cross_entropy(float* dlogits, double* loss_sum, const float* logits, const int32_t* targets,
                     int rows, int V, float grad_scale) override;

  void adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                  const AdamWHyper& h, int64_t t) override;

  // The sentence-embedding head and CoSENT (reference_embedding.cpp).
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

  // Quantization ops (reference_quant.cpp).
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
};

}  // namespace bertrt
