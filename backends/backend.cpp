#include "backends/backend.h"

#include "core/error.h"

namespace bertrt {

const char* op_name(Op op) {
  switch (op) {
    case Op::kFill:
      return "fill";
    case Op::kCopy:
      return "copy";
    case Op::kCopy2d:
      return "copy_2d";
    case Op::kGatherRows:
      return "gather_rows";
    case Op::kScale:
      return "scale";
    case Op::kSumSquares:
      return "sum_squares";
    case Op::kArgmaxRows:
      return "argmax_rows";
    case Op::kMseLoss:
      return "mse_loss";
    case Op::kGemm: return "gemm";
    case Op::kGemmBatched: return "gemm_batched";
    case Op::kAdd: return "add";
    case Op::kBiasAdd: return "bias_add";
    case Op::kBiasBackward: return "bias_backward";
    case Op::kGeluForward: return "gelu_forward";
    case Op::kGeluBackward: return "gelu_backward";
    case Op::kTanhForward: return "tanh_forward";
    case Op::kTanhBackward: return "tanh_backward";
    case Op::kLayerNormForward: return "layernorm_forward";
    case Op::kLayerNormBackward: return "layernorm_backward";
    case Op::kSkipLayerNormForward: return "skip_layernorm_forward";
    case Op::kSoftmaxForward: return "softmax_forward";
    case Op::kSoftmaxBackward: return "softmax_backward";
    case Op::kEmbeddingForward: return "embedding_forward";
    case Op::kEmbeddingBackward: return "embedding_backward";
    case Op::kCrossEntropy: return "cross_entropy";
    case Op::kAdamW: return "adamw_step";
    case Op::kMinMax: return "min_max";
    case Op::kAbsMaxRows: return "absmax_rows";
    case Op::kSymmetricScaleRows:
      return "symmetric_scale_rows";
    case Op::kFakeQuantPerTensor: return "fake_quant_per_tensor";
    case Op::kFakeQuantPerRow: return "fake_quant_per_row";
    case Op::kFakeQuantBackward: return "fake_quant_backward";
    case Op::kQuantizeU8: return "quantize_u8";
    case Op::kGemmU8S8: return "gemm_u8s8_s32";
    case Op::kLinearU8S8: return "linear_u8s8";
    case Op::kLinearU8S8GeluU8:
      return "linear_u8s8_gelu_u8";
    case Op::kDropout:
      return "dropout";
    case Op::kEmbeddingForwardS8:
      return "embedding_forward_s8";
    case Op::kObserveMinMax:
      return "observe_min_max";
    case Op::kFakeQuantObserved:
      return "fake_quant_observed";
    case Op::kPoolTokens: return "pool_tokens";
    case Op::kPoolTokensBackward: return "pool_tokens_backward";
    case Op::kL2NormalizeRows: return "l2_normalize_rows";
    case Op::kL2NormalizeRowsBackward: return "l2_normalize_rows_backward";
    case Op::kCosentLoss: return "cosent_loss";
    case Op::kCount: break;
  }
  return "?";
}

void Backend::linear_u8s8_gelu_u8(uint8_t* q, float* pre, float* act, const uint8_t* A, int lda,
                                  float a_scale, int a_zero_point, const int8_t* W,
                                  const int8_t* w_packed, const float* w_scale,
                                  const int32_t* w_sum, const float* bias, int M, int N, int K,
                                  Gelu kind, float q_scale, int q_zero_point) {
  const size_t n = size_t(M) * N;
  linear_u8s8_packed(pre, N, A, lda, a_scale, a_zero_point, W, w_packed, w_scale, w_sum, bias, M, N,
                     K);
  gelu_forward(act, pre, n, kind);
  quantize_u8(q, act, n, q_scale, q_zero_point);
}

void Backend::skip_layernorm_forward(float* out, float* mean, float* rstd, uint8_t* q, float* x,
                                     const float* skip, const float* weight, const float* bias,
                                     int rows, int C, float eps, float q_scale, int q_zero_point) {
  const size_t n = size_t(rows) * C;
  if (skip) add(x, x, skip, n);
  layernorm_forward(out, mean, rstd, x, weight, bias, rows, C, eps);
  if (q) quantize_u8(q, out, n, q_scale, q_zero_point);
}

void Backend::dropout(float*, size_t, float, uint64_t) {
  fail(
      "dropout: the {} backend has none (supports(dropout) is false); train with dropout 0 "
      "(--hidden-dropout-prob 0) on it",
      name());
}

void Backend::linear_forward_inference(float* out, float* pre, const float* x, int ldx,
                                       const float* w, const float* bias, const float* residual,
                                       int M, int N, int K, std::optional<Gelu> gelu) {
  float* y = gelu ? pre : out;
  gemm(false, true, M, N, K, 1.0f, x, ldx, w, K, 0.0f, y, N);
  if (bias) bias_add(y, bias, M, N);
  const size_t n = size_t(M) * N;
  if (gelu) gelu_forward(out, pre, n, *gelu);
  if (residual) add(out, out, residual, n);
}

void Backend::attention_forward_inference(float* ctx, float* probs, float* scores, const float* q,
                                          const float* k, const float* v, const float* mask,
                                          int B, int NH, int T, int HS, float scale) {
  const int C = NH * HS;
  const int64_t TT = int64_t{T} * T;
  for (int b = 0; b < B; ++b)  // scores[b, h] = Q_bh · K_bhᵀ
    gemm_batched(NH, false, true, T, T, HS, 1.0f, q + int64_t{b} * T * C, C, HS,
                 k + int64_t{b} * T * C, C, HS, 0.0f, scores + b * NH * TT, T, TT);
  softmax_forward(probs, scores, mask, B, NH, T, scale);
  for (int b = 0; b < B; ++b)  // ctx_bh = probs_bh · V_bh
    gemm_batched(NH, false, false, T, HS, T, 1.0f, probs + b * NH * TT, T, TT,
                 v + int64_t{b} * T * C, C, HS, 0.0f, ctx + int64_t{b} * T * C, C, HS);
}

void Backend::attention_forward_varlen(float* ctx, float* probs, float* scores, const float* q,
                                       const float* k, const float* v, const int32_t* cu_seqlens,
                                       int S, int NH, int HS, float scale) {
  const int64_t C = int64_t{NH} * HS;
  for (int s = 0; s < S; ++s) {
    const int T = cu_seqlens[s + 1] - cu_seqlens[s];
    if (T <= 0) continue;
    const int64_t x = int64_t{cu_seqlens[s]} * C;
    attention_forward_inference(ctx + x, probs, scores, q + x, k + x, v + x, nullptr, 1, NH, T, HS,
                                scale);
  }
}

}  // namespace bertrt
