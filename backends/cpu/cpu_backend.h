// The CPU backend: OpenBLAS sgemm or bertrt's own fp32 kernel (f32_gemm.h) for the GEMMs, and fp32
// loops written for the compiler to vectorise, multi-versioned for AVX2/FMA on x86-64
// (kernels.h), for the row and elementwise ops; int8 GEMMs with exact int32 sums (q8_gemm.h).
// Everything else (tanh, the memory moves and small reductions of the contract, the int8
// embedding lookup) falls back to the scalar ReferenceBackend, host memory included.
//
// Fully-connected provider (fc_provider.h): only on a backend whose caller declared its weights
// constant (set_constant_weights(true): the inference-only CLI commands and the C API's model
// handle until a trainer is created on it), the Linear-form GEMMs (gemm(no-trans A, trans B,
// alpha 1, beta 0), i.e. nn.Linear's X·Wᵀ) may run on XNNPACK with W packed once per weight
// (keyed by W's address and shape; xnnpack_fc.h) or on bertrt's own kernel with W packed once
// the same way (f32_gemm.h), chosen by BERTRT_FC_PROVIDER (openblas | xnnpack | bertrt | auto;
// default auto, which takes XNNPACK only for shapes where a measurement showed it faster,
// cpu::xnnpack_fc_wins, and only while the packed copies fit cpu::xnnpack_auto_budget_bytes(),
// and bertrt's kernel (avx512f or fma3) only for weights that are a model file's clean pages,
// which it gives back once packed, so that the weights stay resident once: docs/explanation/architecture.md).
// Without the declaration (the default, and always in training) nothing is packed by a weight's
// address and XNNPACK never runs; the GEMMs run on bertrt's kernel with per-call copies under
// bertrt, and under auto where that kernel is avx512f (use_f32_gemm), else on OpenBLAS. Which one
// depends only on the provider, the kernel and the shape, so a training run and its resume from a
// checkpoint compute each step with the same rounding.
//
// Threads: one pool per backend (thread_pool.h) runs every parallel op, OpenBLAS's calls included
// (OpenBLAS itself single-threaded): BERTRT_NUM_THREADS / --threads fix its size (capped at the
// CPUs of the affinity mask); by default it has those CPUs and narrows while other programs keep
// them busy. BERTRT_THREAD_STATS=1 prints its counters on stderr when the backend goes.
// Results do not depend on the thread count: elementwise and row ops split over rows, and the
// reductions (bias/LayerNorm parameter gradients, embedding scatter-add, the loss sum) over
// their outputs, each summed in the serial order.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "backends/cpu/f32_gemm.h"
#include "backends/cpu/fc_provider.h"
#include "backends/cpu/q8_gemm.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/xnnpack_fc.h"
#include "backends/reference/reference_backend.h"
#include "core/buffer.h"

namespace bertrt {

class CpuBackend : public ReferenceBackend {
 public:
  // num_threads ≤ 0: cpu::default_num_threads().
  explicit CpuBackend(int num_threads = 0);
  ~CpuBackend() override;
  const char* name() const override { return "cpu"; }
  // The pool's size (the most threads an op uses; BERTRT_NUM_THREADS, --threads or the usable
  // CPUs) and the pool itself (its adaptive width and counters: thread_pool.h).
  int num_threads() const { return pool_.threads(); }
  const cpu::ThreadPool& thread_pool() const { return pool_; }
  cpu::ThreadPool& thread_pool() { return pool_; }
  // true declares that every weight this backend's ops are given stays unchanged (and its
  // memory is not reused for another weight) until the backend is destroyed or this is set back
  // to false, which drops the packed copies (XNNPACK's and provider bertrt's). The only way
  // XNNPACK or bertrt's kernel is ever used (see
  // "Fully-connected provider" above); inference-only callers set it, training never does.
  // true throws bertrt::Error when the provider is kXnnpack and cpu::xnnpack_available() is
  // false (an explicit request is not silently ignored).
  void set_constant_weights(bool constant);
  bool constant_weights() const { return constant_weights_; }
  // On: training's GEMMs on bertrt's kernel run in blocks whose copies stay near 1 MB each
  // (cpu_backend.cpp, kF32BoundedCopyFloats); off (the default): whole, as fast as they go.
  void prefer_memory(bool on) override { bounded_copies_ = on; }
  bool prefers_memory() const { return bounded_copies_; }
  // The fully-connected provider (fc_provider_from_env() at construction) and what ran.
  cpu::FcProvider fc_provider() const { return fc_provider_; }
  // Throws bertrt::Error for kXnnpack when cpu::xnnpack_available() is false and the weights are
  // declared constant.
  void set_fc_provider(cpu::FcProvider p);
  struct FcStats {
    size_t xnnpack_calls = 0;       // Linear-form GEMMs XNNPACK ran
    size_t bertrt_calls = 0;        // Linear-form GEMMs bertrt's f32_gemm kernels ran
    size_t openblas_calls = 0;      // Linear-form GEMMs OpenBLAS ran
    size_t packed_bytes = 0;        // packed weights held now (XNNPACK's and bertrt's)
    bool constant_weights = false;  // declared: without it XNNPACK never runs
    size_t released_bytes = 0;      // file pages given back for the packed copies held now
  };
  FcStats fc_stats() const;
  // One line for bench / verbose output, e.g. "fc provider auto (weights declared constant):
  // openblas 2, xnnpack 144 Linear GEMMs (12.8 MB packed)".
  std::string fc_summary() const;
  // The kernels this backend runs: cpu::q8_best_kernel() and f32_best_kernel() at construction
  // (BERTRT_Q8_KERNEL / BERTRT_F32_KERNEL or cpuid, read once per process). Tests and benchmarks
  // set others; q8 weights packed for one kernel are not valid for another, so set it before
  // packing. Throws bertrt::Error for a kernel this CPU cannot run.
  void set_q8_kernel(cpu::Q8Kernel k);
  void set_f32_kernel(cpu::F32Kernel k);
  // Inference attention (attention_forward_inference) on f32_attention.h's streamed kernels
  // (true: BERTRT_ATTENTION unset or "streamed", where f32_kernel() is a SIMD kernel) or through
  // T × T buffers and OpenBLAS (false; BERTRT_ATTENTION=gemm, and always on aarch64).
  void set_streamed_attention(bool on) { streamed_attention_ = on; }
  bool streamed_attention() const {
    return streamed_attention_ && f32_kernel_ != cpu::F32Kernel::kScalar;
  }
  cpu::Q8Kernel q8_kernel() const { return q8_kernel_; }
  cpu::F32Kernel f32_kernel() const { return f32_kernel_; }
  // True exactly for the ops overridden below.
  bool supports(Op op) const override;

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

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int rows, int C,
                         float eps) override;
  void skip_layernorm_forward(float* out, float* mean, float* rstd, uint8_t* q, float* x,
                              const float* skip, const float* weight, const float* bias, int rows,
                              int C, float eps, float q_scale, int q_zero_point) override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int rows, int C) override;

  void softmax_forward(float* probs, const float* scores, const float* mask, int B, int NH, int T,
                       float scale) override;
  void softmax_backward(float* dscores, const float* probs, const float* dprobs, int rows, int T,
                        float scale) override;
  // Fused: one pool task per (batch, head) runs Q·Kᵀ, the masked softmax and P·V through two T×T
  // buffers of its thread (the same sgemm calls and softmax rows as the unfused ops, so the same
  // floats), one fork-join instead of 2B + 1, and scores/probs are not touched.
  void attention_forward_inference(float* ctx, float* probs, float* scores, const float* q,
                                   const float* k, const float* v, const float* mask, int B, int NH,
                                   int T, int HS, float scale) override;

  // Streamed as attention_forward_inference: one pool task per (sequence, head, block of query
  // rows) over all sequences at once, each reading only its own keys (the same floats as one
  // sequence alone); BERTRT_ATTENTION=gemm takes the default.
  void attention_forward_varlen(float* ctx, float* probs, float* scores, const float* q,
                                const float* k, const float* v, const int32_t* cu_seqlens, int S,
                                int NH, int HS, float scale) override;

  // Fused where the Linear runs on OpenBLAS or bertrt's kernel: each pool task finishes its block
  // of out (bias, GELU, residual) right after its GEMM, while the block is in cache, in one
  // fork-join instead of up to four; XNNPACK's calls take the default.
  void linear_forward_inference(float* out, float* pre, const float* x, int ldx, const float* w,
                                const float* bias, const float* residual, int M, int N, int K,
                                std::optional<Gelu> gelu) override;

  void embedding_forward(float* out, const int32_t* ids, const float* table, int n, int C) override;
  void embedding_forward_s8(float* out, const int32_t* ids, const int8_t* q, const float* scale,
                            int n, int C, int V) override;
  void embedding_backward(float* dtable, const int32_t* ids, const float* dout, int n,
                          int C) override;

  void cross_entropy(float* dlogits, double* loss_sum, const float* logits, const int32_t* targets,
                     int rows, int V, float grad_scale) override;

  void adamw_step(float* param, float* m, float* v, const float* grad, size_t n,
                  const AdamWHyper& h, int64_t t) override;

  // The sentence-embedding head (cpu_embedding.cpp); cosent_loss is the reference's.
  void pool_tokens(float* out, int ldo, const float* hidden, const int32_t* mask,
                   const int32_t* prompt_length, int B, int T, int H, Pooling mode) override;
  void pool_tokens_backward(float* dhidden, const float* dout, int ldd, const float* hidden,
                            const int32_t* mask, const int32_t* prompt_length, int B, int T, int H,
                            Pooling mode) override;
  void l2_normalize_rows(float* y, const float* x, int ldx, int rows, int cols) override;
  void l2_normalize_rows_backward(float* dx, int lddx, const float* x, int ldx, const float* dy,
                                  int rows, int cols) override;

  // Quantization ops (cpu_quant.cpp): vectorised loops (quant_kernels.h) and the exact u8×s8
  // GEMM tiles (q8_gemm.h, AVX2 when the CPU has it), split over the pool by output columns.
  void min_max(float* mn, float* mx, const float* x, size_t n) override;
  void absmax_rows(float* out, const float* x, int rows, int cols) override;
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
  // W packed for this backend's int8 kernel (q8_gemm.h: the VNNI, AVX2 and NEON i8mm panels;
  // none for the other NEON kernels).
  size_t q8_packed_weight_bytes(int N, int K) const override;
  void pack_q8_weight(int8_t* packed, const int8_t* W, int N, int K) override;
  void linear_u8s8_packed(float* out, int ldo, const uint8_t* A, int lda, float a_scale,
                          int a_zero_point, const int8_t* W, const int8_t* w_packed,
                          const float* w_scale, const int32_t* w_sum, const float* bias, int M,
                          int N, int K) override;
  void linear_u8s8_gelu_u8(uint8_t* q, float* pre, float* act, const uint8_t* A, int lda,
                           float a_scale, int a_zero_point, const int8_t* W, const int8_t* w_packed,
                           const float* w_scale, const int32_t* w_sum, const float* bias, int M,
                           int N, int K, Gelu kind, float q_scale, int q_zero_point) override;

 private:
  cpu::ThreadPool pool_;
  cpu::Q8Kernel q8_kernel_;    // q8_best_kernel() at construction (BERTRT_Q8_KERNEL or cpuid)
  cpu::F32Kernel f32_kernel_;  // f32_best_kernel() at construction (BERTRT_F32_KERNEL or cpuid)
  cpu::FcProvider fc_provider_;
  bool streamed_attention_;              // f32_attention_streamed_from_env() at construction
  std::unique_ptr<cpu::XnnpackFc> xnn_;  // created at the first XNNPACK call
  FloatBuffer f32_packed_x_;             // X packed for f32_kernel_ (grown, never shrunk)
  FloatBuffer f32_gemm_w_, f32_gemm_y_;  // f32_gemm's packed block of B and of the product
  // Weights packed once for f32_kernel_'s broadcast form (f32_pack_wb; not f32_gemm_xwt's
  // layout), by address: constant weights only (a weight's address then always holds the same
  // values).
  struct PackedW {
    int N = 0, K = 0;
    FloatBuffer data;
  };
  std::unordered_map<const float*, PackedW> f32_packed_w_;
  size_t f32_packed_w_bytes_ = 0, f32_released_bytes_ = 0;
  mutable std::unordered_set<const float*> f32_not_in_file_;  // auto: weights it will not pack
  // W packed for f32_kernel_'s broadcast form (at its first use), or nullptr for the scalar kernel.
  const float* f32_packed_w(const float* W, int N, int K);
  void drop_f32_packed_w();  // the packed copies and their counts
  bool constant_weights_ = false;
  bool bounded_copies_ = false;  // prefer_memory
  // The floats a training GEMM's copy may take: kF32BoundedCopyFloats, or no bound.
  size_t copy_floats() const;
  // W [N, K] (row stride K) packed once (f32_pack_w's layout) into f32_gemm_w_, for blocks of rows.
  const float* pack_w_for_blocks(const float* W, int N, int K);
  size_t fc_xnnpack_calls_ = 0, fc_openblas_calls_ = 0, fc_bertrt_calls_ = 0;
  bool use_xnnpack(int M, int N, int K) const;
  bool use_f32_kernel(const float* W, int M, int N, int K, int lda, int ldc) const;
  // What linear_forward_inference does to a block of out after its GEMM (which added the bias).
  struct LinearEpilogue {
    const float* residual;  // [M, N] or null
    std::optional<Gelu> gelu;
  };
  // Y [M, N] (row stride ldy) = X·Wᵀ (+ bias) on f32_kernel_, split over the pool; each task then
  // applies ep (if any) to its block of Y.
  void f32_linear(float* Y, int ldy, const float* X, int ldx, const float* W, int M, int N, int K,
                  const float* bias = nullptr, const LinearEpilogue* ep = nullptr);
  // The split of f32_linear for any X and W: X [M, K] (row stride ldx), or x_t: X = Aᵀ for A =
  // `X` [K, M]; W [N, K] rows (row stride ldw) or, ldw == 0, packed (f32_pack_w's layout).
  void f32_xwt(float* Y, int ldy, const float* X, int ldx, bool x_t, const float* W, int ldw, int M,
               int N, int K, const float* bias, const LinearEpilogue* ep);
  // Whether gemm runs a GEMM of changing weights (training) on f32_kernel_ (see gemm).
  bool use_f32_gemm(bool trans_b, int M, int N, int K, float alpha, float beta) const;
  // gemm on f32_kernel_: op(B) as the kernel's W (B's rows when trans_b, else B [K, N] packed
  // per call by f32_pack_w_t), op(A) packed into panels (f32_pack_x_t when trans_a), the product
  // written to C when alpha = 1 and beta = 0, else to a scratch then C = alpha·T + beta·C; in
  // blocks of columns and rows that bound each of these copies, whatever the batch.
  void f32_gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc);
  // f(r0, r1, c0, c1) for the blocks of an M × N × K GEMM's C, over the pool where it splits.
  template <class F>
  void for_gemm_blocks(int M, int N, int K, F&& f);
  bool within_pack_budget(const float* W, int N, int K, int lda, int ldc) const;
  // Whether a Linear-form GEMM on weights W runs on XNNPACK (provider rule and pack budget).
  bool fc_on_xnnpack(const float* W, int M, int N, int K, int lda, int ldc) const;
};

}  // namespace bertrt
