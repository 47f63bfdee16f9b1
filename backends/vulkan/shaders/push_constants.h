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

// A reduction of n floats to one value in two dispatches (fp32 pairwise sums, the workgroups'
// partials in scratch): PASS 0 one workgroup per `chunk` elements, PASS 1 one workgroup over the
// partials, which writes the result (a double's two words, or min and max).
struct ReducePush {
  uint n;  // elements (PASS 0) or partials (PASS 1)
  uint x_offset, partial_offset, out_offset, out2_offset;
  uint chunk;
  uint groups_x;
};

// One workgroup per row of x [rows, cols]: argmax_rows (int out), absmax_rows and
// symmetric_scale_rows (float out; half_range = (qmax − qmin) / 2 rounded as the host rounds it).
struct RowReducePush {
  uint rows, cols;
  uint out_offset, x_offset;
  float half_range;
  uint groups_x;
};

// Softmax cross-entropy, one workgroup per row of logits [rows, V]; row losses to loss_offset
// (scratch), summed afterwards by the reduction.
struct CrossEntropyPush {
  uint rows, V;
  uint dlogits_offset, logits_offset, targets_offset, loss_offset;
  uint has_dlogits;
  float grad_scale;
  uint groups_x;
};

// MSE pieces, one thread per prediction: squared differences to sq_offset (scratch), dpred.
struct MsePush {
  uint n;
  uint dpred_offset, pred_offset, target_offset, sq_offset;
  uint has_dpred;
  float weight;
  uint groups_x;
};

// dtable[ids[i]] += dout[i]: one workgroup per position; only the first position of each id
// writes its row, adding every matching position in index order (no atomics, the reference's
// order and bits).
struct EmbeddingBackwardPush {
  uint n, C;
  uint dtable_offset, ids_offset, dout_offset;
  uint groups_x;
};

// Fake-quant (per tensor / per row / from an observed range), quantize_u8, the STE backward and
// the observer update. Byte arrays (mask, q) are addressed in bytes from their binding's start
// and written a 32-bit word per thread. observe_min_max: n = parts, cols = first, scale =
// momentum, x = the batch ranges, out = the observed range.
struct FakeQuantPush {
  uint n, cols;
  uint out_offset, bytes_offset, x_offset, scale_offset;
  uint has_mask;
  float scale;
  int zero_point, qmin, qmax;
  uint groups_x;
};

// u8 × s8 GEMM with int32 accumulation: raw sums (OP 0) or the int8 Linear's dequantizing
// epilogue (OP 1). a_offset / b_offset and lda / ldb are in bytes.
struct Q8GemmPush {
  uint M, N, K;
  uint lda, ldb, ldc;
  uint a_offset, b_offset, c_offset;
  uint w_scale_offset, w_sum_offset, bias_offset, has_bias;
  float a_scale;
  int a_zero_point;
};

// out[i, :] += scale[ids[i]] · q[ids[i], :], q int8 [V, C] (q_offset in bytes).
struct EmbeddingS8Push {
  uint n, C, V;
  uint out_offset, ids_offset, q_offset, scale_offset;
  uint groups_x;
};

// pool_tokens (BACKWARD 0) and pool_tokens_backward (1), one thread per (sequence b, column c):
// out / dhidden, hidden, mask, prompt_length and dout at their offsets; ld the row stride of
// out (forward) or dout (backward); mode as backend.h Pooling, in order.
struct PoolPush {
  uint B, T, H;
  uint out_offset, hidden_offset, mask_offset, prompt_offset, dout_offset;
  uint ld, mode;
  uint groups_x;
};

// l2_normalize_rows (BACKWARD 0: out = y, rows of cols) and its backward (1: out = dx, row stride
// ld_out, dy [rows, cols]); one workgroup per row.
struct L2NormalizePush {
  uint rows, cols;
  uint out_offset, ld_out, x_offset, ldx, dy_offset;
  uint groups_x;
};

// cosent_loss in one workgroup: the loss (float) to loss_offset, dcos when has_dcos.
struct CosentPush {
  uint n;
  uint dcos_offset, cos_offset, labels_offset, loss_offset;
  uint has_dcos;
  float scale, grad_scale;
};

// Errors an op finds while it runs (read and cleared by the host at sync): code, then two
// values that the host's message names, and the bound (V) where there is one.
#define BERTRT_VK_ERROR_TARGET 1u  // cross_entropy: row, target
#define BERTRT_VK_ERROR_ID 2u      // embedding_forward_s8: position, id
#define BERTRT_VK_ERROR_SCALE 3u   // fake_quant_per_row: row, scale bits
#define BERTRT_VK_ERROR_RANGE 4u   // observe_min_max: the batch range's min and max bits
#define BERTRT_VK_ERROR_WINDOW 5u  // rows, embedding_backward: position, id past the bound rows

#ifdef __cplusplus
}  // namespace bertrt::vk
#endif
#endif
