// Push-constant layouts shared by the C++ host code and the GLSL shaders (glslc -I), so the two
// sides cannot drift. Offsets are in elements of the bound buffers: every binding is a whole
// VkBuffer (one per Backend::alloc block), and an interior pointer is its block + an offset.
#ifndef BERTRT_VK_PUSH_CONSTANTS_H
#define BERTRT_VK_PUSH_CONSTANTS_H

#ifdef __cplusplus
#include <cstdint>
namespace bertrt::vk {
typedef uint32_t uint;
#endif

// Elementwise over n elements: fill (x = value), scale (x *= value), add (out = a + b).
struct ElementwisePush {
  uint n;
  uint out_offset, a_offset, b_offset;
  float value;
  uint groups_x;  // dispatch width, for grids folded into y (> 65535 workgroups)
};

// out[r, c] += bias[c], out [rows, cols].
struct BiasAddPush {
  uint rows, cols;
  uint out_offset, bias_offset;
  uint groups_x;
};

// C = alpha · op(A) · op(B) + beta · C per batch entry (gl_WorkGroupID.z).
struct GemmPush {
  uint M, N, K;
  uint lda, ldb, ldc;
  uint a_offset, b_offset, c_offset;
  uint stride_a, stride_b, stride_c;
  uint trans_a, trans_b;
  float alpha, beta;
};

// GELU over n elements: kind 0 exact erf, 1 tanh approximation.
struct GeluPush {
  uint n;
  uint out_offset, inp_offset;
  uint kind;
  uint groups_x;
};

// LayerNorm over rows of C: one workgroup per row (rows folded into y beyond 65535).
struct LayerNormPush {
  uint rows, C;
  uint out_offset, mean_offset, rstd_offset, inp_offset, weight_offset, bias_offset;
  float eps;
  uint groups_x;
};

// Attention softmax over rows of T keys: one workgroup per row of [B, NH, T, T].
struct SoftmaxPush {
  uint B, NH, T;
  uint probs_offset, scores_offset, mask_offset;
  uint has_mask;
  float scale;
  uint groups_x;
};

// One AdamW step over n elements (backend.h AdamWHyper; the scalars rounded to float on the
// host exactly as the cpu backend rounds them).
struct AdamWPush {
  uint n;
  uint param_offset, m_offset, v_offset, grad_offset;
  uint bias_correction;
  float b1, b2, one_minus_b1, one_minus_b2, eps;
  float decay, step_size, bc2_sqrt;  // torch form
  float lr, wd;                      // original BERT form
  uint groups_x;
};

// Elementwise backward and tanh: dinp += f'(inp) · dout (gelu: inp the pre-activation; tanh:
// inp the forward's OUTPUT), or out = tanh(inp).
struct ActivationPush {
  uint n;
  uint out_offset, inp_offset, dout_offset;
  uint kind;  // gelu: 0 erf, 1 tanh form
  uint groups_x;
};

// dbias[c] += Σ_r dout[r, c]: one thread per column, rows summed in order.
struct BiasBackwardPush {
  uint rows, cols;
  uint dbias_offset, dout_offset;
  uint groups_x;
};

// dscores += scale · p ⊙ (dp − Σ p ⊙ dp), one workgroup per row of T.
struct SoftmaxBackwardPush {
  uint rows, T;
  uint dscores_offset, probs_offset, dprobs_offset;
  float scale;
  uint groups_x;
};

// Row moves of n rows of C: embedding_forward (out[i] += table[ids[i]]), gather_rows
// (out[i] = src[rows[i]]), copy_2d (dst[r·ldd + c] = src[r·lds + c]).
struct RowsPush {
  uint n, C;
  uint out_offset, src_offset, ids_offset;
  uint ldd, lds;
  uint groups_x;
};

// LayerNorm backward, two dispatches reading the same inputs: PASS 0 one workgroup per row,
// dinp += rstd·(dn − mean(dn) − n·mean(dn ⊙ n)) with n = (x − μ)·rstd, dn = w ⊙ dout; PASS 1
// one thread per column, dweight += Σ_r n·dout, dbias += Σ_r dout (rows in order, no atomics).
struct LayerNormBackwardPush {
  uint rows, C;
  uint dinp_offset, dweight_offset, dbias_offset, dout_offset, inp_offset, weight_offset,
      mean_offset, rstd_offset;
  uint groups_x;
};

#ifdef __cplusplus
}  // namespace bertrt::vk
#endif
#endif
