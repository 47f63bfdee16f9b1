// The CPU backend's loops over a range of elements, rows or columns, written for the compiler to
// vectorise (contiguous inner loops, __restrict, selects instead of branches) and multi-versioned
// for AVX2/FMA (simd.h). CpuBackend (cpu_backend.cpp) splits each op over its thread pool and
// calls these on each tile; every kernel writes only the outputs of its own range, so a tile's
// result does not depend on how the op was split.
//
// Shapes are those of backends/backend.h; `C`, `T`, `V` are row lengths.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bertrt::cpu {

// out[i] = a[i] + b[i] (out may alias a or b).
void add_kernel(float* out, const float* a, const float* b, size_t n);
// out[r, :] += bias for rows [r0, r1) of out [*, cols].
void bias_add_rows(float* out, const float* bias, int r0, int r1, int cols);
// dbias[c] += Σ_{r < rows} dout[r, c] for columns [c0, c1), rows summed in order.
void bias_backward_cols(float* dbias, const float* dout, int rows, int cols, int c0, int c1);

// GELU over n elements (erf form: x·Φ(x) with Φ from normal_cdf_f32; tanh form via std::tanh).
void gelu_erf_forward_kernel(float* out, const float* x, size_t n);
// dropout_rule.h's mask on x[i0, i1) in place (the indices are the call's, so any split draws the
// same mask).
void dropout_kernel(float* x, size_t i0, size_t i1, uint32_t threshold, float scale, uint64_t seed);
void gelu_erf_backward_kernel(float* dx, const float* x, const float* dy, size_t n);
void gelu_tanh_forward_kernel(float* out, const float* x, size_t n);
void gelu_tanh_backward_kernel(float* dx, const float* x, const float* dy, size_t n);

// LayerNorm forward / the dinp part of the backward for rows [r0, r1) of [*, C].
void layernorm_forward_rows(float* out, float* mean, float* rstd, const float* inp,
                            const float* weight, const float* bias, int r0, int r1, int C,
                            float eps);
void layernorm_backward_dinp_rows(float* dinp, const float* dout, const float* inp,
                                  const float* weight, const float* mean, const float* rstd,
                                  int r0, int r1, int C);
// dweight[c] += Σ_r n[r,c]·dout[r,c], dbias[c] += Σ_r dout[r,c] for columns [c0, c1), rows in
// order (n = (x − mean)·rstd).
void layernorm_backward_params_cols(float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* mean, const float* rstd,
                                    int rows, int C, int c0, int c1);

// Softmax rows [r0, r1) of scores [B·NH·T, T]; the mask row of row r is r / (NH·T).
void softmax_forward_rows(float* probs, const float* scores, const float* mask, int NH, int T,
                          float scale, size_t r0, size_t r1);
void softmax_backward_rows(float* dscores, const float* probs, const float* dprobs, int T,
                           float scale, size_t r0, size_t r1);

// out[i, :] += table[ids[i], :] for rows [r0, r1).
void embedding_forward_rows(float* out, const int32_t* ids, const float* table, int r0, int r1,
                            int C);
// dtable[ids[i], c] += dout[i, c] for all i < n in order, columns [c0, c1).
void embedding_backward_cols(float* dtable, const int32_t* ids, const float* dout, int n, int C,
                             int c0, int c1);

// Cross-entropy rows [r0, r1): loss[r] = max + log Σ exp(z − max) − z[t] (0 for ignored rows,
// t < 0); dlogits (when non-null) overwritten as in Backend::cross_entropy. Targets must already
// be checked to be < V.
void cross_entropy_rows(double* loss, float* dlogits, const float* logits, const int32_t* targets,
                        int V, float grad_scale, int r0, int r1);

// One AdamW step over n elements; the scalar factors come from CpuBackend::adamw_step.
struct AdamWScalars {
  float b1, b2, one_minus_b1, one_minus_b2, eps;
  float decay, step_size, bc2_sqrt;  // torch form
  float lr, wd;                      // original BERT form
  bool bias_correction;
};
void adamw_kernel(float* p, float* m, float* v, const float* g, size_t n, const AdamWScalars& s);

}  // namespace bertrt::cpu
