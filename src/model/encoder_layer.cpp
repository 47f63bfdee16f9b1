#include "model/encoder_layer.h"

#include <cmath>

#include "model/bert_quant.h"
#include "model/linear.h"
#include "model/lora.h"
#include "quant/quant_linear.h"

namespace bertrt {

namespace {

// out [N, out_f] += the adapter of Linear k, if it has one.
void lora_add(Backend& be, const LoraParams& p, const LayerActs& a, const LayerDims& d, int k,
              float* out, const float* inp, int in_f, int out_f) {
  if (!p) return;
  lora_forward(be, out, a.lora_u[k], a.lora_xd, inp, p.A, p.B, d.N(), in_f, out_f, d.lora.r,
               d.lora.scaling, 0, d.lora.dropout, d.lora_seed[k]);
}

// Its backward: dA, dB and dinp through the adapter (the frozen Linear's dinp is separate).
void lora_back(Backend& be, const LoraParams& p, const LoraParams& dp, const LayerActs& a,
               const LayerGradScratch& s, const LayerDims& d, int k, float* dinp,
               const float* dout, const float* inp, int in_f, int out_f) {
  if (!p) return;
  lora_backward(be, dinp, dp.A, dp.B, s.lora_du, a.lora_xd, dout, inp, a.lora_u[k], p.A, p.B,
                d.N(), in_f, out_f, d.lora.r, d.lora.scaling, 0, 0, d.lora.dropout,
                d.lora_seed[k]);
}

}  // namespace

void encoder_layer_forward(Backend& be, const LayerActs& a, float* scores, const float* inp,
                           const float* mask_add, const LayerParams& w, const LayerDims& d,
                           const LayerQuant* q) {
  const int N = d.N(), C = d.C(), I = d.I;
  const LayerQuant Q = q ? *q : LayerQuant{};
  QuantLinear* const qkv[3] = {Q.query, Q.key, Q.value};
  float* const qkv_out[3] = {a.q, a.k, a.v};
  const float* const qkv_b[3] = {w.query_b, w.key_b, w.value_b};
  const float* const qkv_w[3] = {w.query_w, w.key_w, w.value_w};
  // Without a backward or dropout (inference), each Linear runs with its epilogue fused: bias,
  // GELU and the residual add in the GEMM's pass (Backend::linear_forward_inference).
  // Adapters add to a Linear's output before its epilogue: those layers run unfused (a merged
  // model, bertrt merge, runs fused again).
  const bool fused = a.no_backward && d.dropout == 0.0f && !w.has_lora();
  if (!int8_same_input_forward(be, qkv, qkv_out, qkv_b, 3, inp, N, C, C)) {
    for (int i = 0; i < 3; ++i) {
      if (fused)
        linear_forward_inference(be, qkv_out[i], nullptr, inp, qkv_w[i], qkv_b[i], nullptr, N, C, C,
                                 std::nullopt, qkv[i]);
      else
        linear_forward(be, qkv_out[i], inp, qkv_w[i], qkv_b[i], N, C, C, 0, qkv[i]);
    }
  }
  const LoraParams qkv_lora[3] = {w.query_lora, w.key_lora, w.value_lora};
  for (int i = 0; i < 3; ++i) lora_add(be, qkv_lora[i], a, d, kLoraQuery + i, qkv_out[i], inp, C, C);
  if (d.att.cu_seqlens)  // packed: inference only (encoder_forward refuses training)
    be.attention_forward_varlen(a.ctx, a.probs, scores, a.q, a.k, a.v, d.att.cu_seqlens, d.att.B,
                                d.att.NH, d.att.HS, 1.0f / std::sqrt(float(d.att.HS)));
  else if (a.inference && d.att_drop.p == 0.0f)
    be.attention_forward_inference(a.ctx, a.probs, scores, a.q, a.k, a.v, mask_add, d.att.B,
                                   d.att.NH, d.att.T, d.att.HS, 1.0f / std::sqrt(float(d.att.HS)));
  else
    attention_forward(be, a.ctx, a.probs, scores, a.q, a.k, a.v, mask_add, d.att, d.att_drop);
  // The residual adds: in the fp32 GEMM's epilogue at inference, else in the LayerNorm's pass
  // (skip_layernorm_forward), which also quantizes ln1 for an int8 feed-forward.
  auto in_gemm = [&](const QuantLinear* ql) {
    return fused && (!ql || ql->mode == QuantMode::kFloat);
  };
  const size_t NC = size_t(N) * C;
  if (fused) {
    linear_forward_inference(be, a.res1, nullptr, a.ctx, w.attn_out_w, w.attn_out_b,
                             in_gemm(Q.attn_out) ? inp : nullptr, N, C, C, std::nullopt,
                             Q.attn_out);
  } else {
    linear_forward(be, a.res1, a.ctx, w.attn_out_w, w.attn_out_b, N, C, C, 0, Q.attn_out);
    lora_add(be, w.attn_out_lora, a, d, kLoraAttnOut, a.res1, a.ctx, C, C);
    if (d.dropout > 0.0f) be.dropout(a.res1, NC, d.dropout, d.attn_seed);
  }
  // At inference nothing reads the fp32 intermediate: int8 layers keep it quantized (unless an
  // adapter adds to the feed-forward's Linears: they run one by one).
  const bool int8_ffn = a.no_backward && !w.inter_lora && !w.out_lora &&
                        int8_ffn_applies(Q.inter, Q.out, C, I);
  uint8_t* ln1_q = int8_ffn ? int8_ffn_input(be, *Q.inter, N, C) : nullptr;
  be.skip_layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, ln1_q, a.res1,
                            in_gemm(Q.attn_out) ? nullptr : inp, w.attn_ln_w, w.attn_ln_b, N, C,
                            d.eps, int8_ffn ? Q.inter->act.scale : 0.0f,
                            int8_ffn ? Q.inter->act.zero_point : 0);
  const float* skip2 = a.ln1;
  if (int8_ffn) {
    int8_ffn_forward(be, *Q.inter, *Q.out, a.res2, a.inter_pre, a.inter, ln1_q, w.inter_b, w.out_b,
                     N, C, I, d.gelu);
  } else if (fused) {
    linear_forward_inference(be, a.inter, a.inter_pre, a.ln1, w.inter_w, w.inter_b, nullptr, N, C,
                             I, d.gelu, Q.inter);
    linear_forward_inference(be, a.res2, nullptr, a.inter, w.out_w, w.out_b,
                             in_gemm(Q.out) ? a.ln1 : nullptr, N, I, C, std::nullopt, Q.out);
    if (in_gemm(Q.out)) skip2 = nullptr;
  } else {
    linear_forward(be, a.inter_pre, a.ln1, w.inter_w, w.inter_b, N, C, I, 0, Q.inter);
    lora_add(be, w.inter_lora, a, d, kLoraInter, a.inter_pre, a.ln1, C, I);
    be.gelu_forward(a.inter, a.inter_pre, size_t(N) * I, d.gelu);
    linear_forward(be, a.res2, a.inter, w.out_w, w.out_b, N, I, C, 0, Q.out);
    lora_add(be, w.out_lora, a, d, kLoraOut, a.res2, a.inter, I, C);
    if (d.dropout > 0.0f) be.dropout(a.res2, NC, d.dropout, d.ffn_seed);
  }
  be.skip_layernorm_forward(a.out, a.ln2_mean, a.ln2_rstd, nullptr, a.res2, skip2, w.out_ln_w,
                            w.out_ln_b, N, C, d.eps, 0.0f, 0);
}

void encoder_layer_backward(Backend& be, float* dinp, const LayerParams& dw,
                            const LayerGradScratch& s, const float* dout, const float* inp,
                            const LayerActs& a, const LayerParams& w, const LayerDims& d,
                            const LayerQuant* q) {
  const LayerQuant Q = q ? *q : LayerQuant{};
  const int N = d.N(), C = d.C(), I = d.I;
  const size_t NC = size_t(N) * C, NI = size_t(N) * I;
  // Feed-forward block, from the output LayerNorm back to ln1.
  // A frozen LayerNorm (adapters train, the base stays) gets its parameter gradients written
  // into scratch: the op computes them alongside dinp, and no one reads them.
  auto ln_grad = [&](float* g, float* scratch) { return g ? g : scratch; };
  be.fill(s.dres, 0.0f, NC);
  be.layernorm_backward(s.dres, ln_grad(dw.out_ln_w, s.frozen_ln_w),
                        ln_grad(dw.out_ln_b, s.frozen_ln_b), dout, a.res2, w.out_ln_w, a.ln2_mean,
                        a.ln2_rstd, N, C);
  be.copy(s.dln1, s.dres, NC * sizeof(float));  // residual: res2 = dropout(ffn(ln1)) + ln1
  if (d.dropout > 0.0f) be.dropout(s.dres, NC, d.dropout, d.ffn_seed);  // the same mask
  be.fill(s.dinter, 0.0f, NI);
  linear_backward(be, s.dinter, dw.out_w, dw.out_b, s.dres, a.inter, w.out_w, N, I, C, 0, 0, Q.out);
  lora_back(be, w.out_lora, dw.out_lora, a, s, d, kLoraOut, s.dinter, s.dres, a.inter, I, C);
  // The GELU's output has had its last reader (the weight gradient above): its [N, I] buffer
  // takes the gradient of the GELU's input (4 MB less at BERT-mini B8 S128).
  float* dinter_pre = a.inter;
  be.fill(dinter_pre, 0.0f, NI);
  be.gelu_backward(dinter_pre, a.inter_pre, s.dinter, NI, d.gelu);
  linear_backward(be, s.dln1, dw.inter_w, dw.inter_b, dinter_pre, a.ln1, w.inter_w, N, C, I, 0, 0,
                  Q.inter);
  lora_back(be, w.inter_lora, dw.inter_lora, a, s, d, kLoraInter, s.dln1, dinter_pre, a.ln1, C, I);
  // Attention block, from LayerNorm 1 back to the layer input.
  be.fill(s.dres, 0.0f, NC);
  be.layernorm_backward(s.dres, ln_grad(dw.attn_ln_w, s.frozen_ln_w),
                        ln_grad(dw.attn_ln_b, s.frozen_ln_b), s.dln1, a.res1, w.attn_ln_w,
                        a.ln1_mean, a.ln1_rstd, N, C);
  be.add(dinp, dinp, s.dres, NC);  // residual: res1 = dropout(attn(inp)) + inp
  if (d.dropout > 0.0f) be.dropout(s.dres, NC, d.dropout, d.attn_seed);
  be.fill(s.dctx, 0.0f, NC);
  linear_backward(be, s.dctx, dw.attn_out_w, dw.attn_out_b, s.dres, a.ctx, w.attn_out_w, N, C, C, 0,
                  0, Q.attn_out);
  lora_back(be, w.attn_out_lora, dw.attn_out_lora, a, s, d, kLoraAttnOut, s.dctx, s.dres, a.ctx, C,
            C);
  be.fill(s.dq, 0.0f, NC);
  be.fill(s.dk, 0.0f, NC);
  be.fill(s.dv, 0.0f, NC);
  attention_backward(be, s.dq, s.dk, s.dv, s.dprobs, s.dscores, s.dctx, a.q, a.k, a.v, a.probs,
                     d.att, d.att_drop);
  linear_backward(be, dinp, dw.query_w, dw.query_b, s.dq, inp, w.query_w, N, C, C, 0, 0, Q.query);
  linear_backward(be, dinp, dw.key_w, dw.key_b, s.dk, inp, w.key_w, N, C, C, 0, 0, Q.key);
  linear_backward(be, dinp, dw.value_w, dw.value_b, s.dv, inp, w.value_w, N, C, C, 0, 0, Q.value);
  lora_back(be, w.query_lora, dw.query_lora, a, s, d, kLoraQuery, dinp, s.dq, inp, C, C);
  lora_back(be, w.key_lora, dw.key_lora, a, s, d, kLoraKey, dinp, s.dk, inp, C, C);
  lora_back(be, w.value_lora, dw.value_lora, a, s, d, kLoraValue, dinp, s.dv, inp, C, C);
}

}  // namespace bertrt
