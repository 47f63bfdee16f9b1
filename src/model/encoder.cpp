#include "model/encoder.h"

#include <algorithm>
#include <utility>

#include "backends/dropout_rule.h"
#include "core/error.h"
#include "model/bert_quant.h"
#include "model/linear.h"
#include "model/lora.h"

namespace bertrt {

namespace {

// Layer l's dims, with its dropout seeds when a training forward drops.
LayerDims layer_dims(const BertConfig& c, int B, int T, const EncoderActs& a, int l,
                     const int32_t* cu_seqlens = nullptr) {
  LayerDims d{AttentionDims{B, T, c.num_attention_heads, c.head_dim(), cu_seqlens},
              c.intermediate_size, c.layer_norm_eps, c.gelu()};
  if (a.training() && a.dropout.any()) {
    const Dropout& p = a.dropout;
    d.dropout = p.prob;
    d.attn_seed = dropout_seed(p.seed, p.step, Dropout::attention_site(l));
    d.ffn_seed = dropout_seed(p.seed, p.step, Dropout::ffn_site(l));
    d.att_drop = {p.attention_probs,
                  dropout_seed(p.seed, p.step, Dropout::attention_probs_site(l))};
  }
  d.lora = a.lora;
  if (!a.training()) d.lora.dropout = 0.0f;
  if (d.lora.dropout > 0.0f)
    for (int k = 0; k < 6; ++k)
      d.lora_seed[k] = dropout_seed(a.dropout.seed, a.dropout.step, Dropout::lora_site(l, k));
  return d;
}

// The pooler adapter's dropout seed (its own site, above every layer's).
uint64_t pooler_lora_seed(const BertConfig& c, const EncoderActs& a) {
  return dropout_seed(a.dropout.seed, a.dropout.step, Dropout::lora_site(c.num_hidden_layers, 0));
}

// The embeddings' output dropout (forward on the output, backward on its gradient: one mask).
void embeddings_dropout(Backend& be, const EncoderActs& a, float* x, size_t n) {
  if (!a.training() || a.dropout.prob <= 0.0f) return;
  be.dropout(x, n, a.dropout.prob,
             dropout_seed(a.dropout.seed, a.dropout.step, Dropout::embeddings_site()));
}

// The per-layer buffers the backward reads (everything but `out`).
void take_work(LayerActs& L, Carver& cv, size_t N, size_t C, size_t I, size_t P, size_t r) {
  L.q = cv.take(N * C), L.k = cv.take(N * C), L.v = cv.take(N * C);
  L.probs = cv.take(P);
  L.ctx = cv.take(N * C), L.res1 = cv.take(N * C), L.ln1 = cv.take(N * C);
  L.ln1_mean = cv.take(N), L.ln1_rstd = cv.take(N);
  L.inter_pre = cv.take(N * I), L.inter = cv.take(N * I);
  L.res2 = cv.take(N * C);
  L.ln2_mean = cv.take(N), L.ln2_rstd = cv.take(N);
  if (r > 0)
    for (float*& u : L.lora_u) u = cv.take(N * r);
}

// One pass with base == nullptr counts the floats, the second carves the buffer.
// packed_rows > 0: a packed inference batch of that many rows, attention scratch for one
// sequence of T.
void carve(EncoderActs& a, Carver& cv, const BertConfig& c, int B, int T, bool training,
           const BackwardPlan& plan, int packed_rows = 0) {
  const size_t N = packed_rows > 0 ? size_t(packed_rows) : size_t(B) * T;
  const size_t C = c.hidden_size, I = c.intermediate_size;
  const size_t P = size_t(packed_rows > 0 ? 1 : B) * c.num_attention_heads * T * T;
  const size_t r = size_t(a.lora.r);
  a.layers.assign(c.num_hidden_layers, LayerActs{});
  // Layers below keep_from have no backward (inference, or frozen): one shared set of work
  // buffers and two outputs used alternately (a layer reads only the previous one's output).
  const int keep_from = training ? plan.first_layer : c.num_hidden_layers;
  LayerActs shared{};
  bool have_shared = false;
  float* alternate[2] = {nullptr, nullptr};
  if (keep_from > 0) alternate[0] = cv.take(N * C), alternate[1] = cv.take(N * C);
  // With such layers there is no embeddings backward (it needs every layer's), so the
  // embeddings' LayerNorm input is dead once the LayerNorm ran: the second alternate output
  // holds it (layer 1 is the first to write there).
  float* emb_sum = keep_from > 0 ? alternate[1] : cv.take(N * C);
  a.emb = EmbeddingActs{emb_sum, cv.take(N * C), cv.take(N), cv.take(N)};
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    LayerActs& L = a.layers[l];
    if (l < keep_from || plan.recompute) {
      if (!have_shared) take_work(shared, cv, N, C, I, P, r), have_shared = true;
      L = shared;
      if (l < keep_from) {
        L.out = alternate[l % 2];
        L.no_backward = true;
        L.inference = !training;
      } else {
        L.out = cv.take(N * C);  // recompute: the layer's output is all it keeps
      }
      continue;
    }
    take_work(L, cv, N, C, I, P, r);
    L.out = cv.take(N * C);
  }
  // The adapters' dropped input: only a training forward drops.
  float* lora_xd = r > 0 && training && a.lora.dropout > 0.0f ? cv.take(N * std::max(C, I)) : nullptr;
  for (LayerActs& L : a.layers) L.lora_xd = lora_xd;
  a.pooler_lora_u = r > 0 ? cv.take(size_t(B) * r) : nullptr;
  a.scores = cv.take(P);
  a.mask_add = cv.take(N);
  a.pooled_pre = cv.take(size_t(B) * C);
  a.pooled = cv.take(size_t(B) * C);
  if (training) {
    a.dhidden = cv.take(N * C), a.dnext = cv.take(N * C);
    a.demb_sum = plan.embeddings ? cv.take(N * C) : nullptr;
    a.dpooled = cv.take(size_t(B) * C), a.dpooled_pre = cv.take(size_t(B) * C);
    LayerGradScratch& s = a.scratch;
    s.dres = cv.take(N * C), s.dln1 = cv.take(N * C), s.dctx = cv.take(N * C);
    s.dq = cv.take(N * C), s.dk = cv.take(N * C), s.dv = cv.take(N * C);
    s.dinter = cv.take(N * I);
    // The forward's score scratch is free during a layer's backward (a recomputed forward runs
    // before it, never inside it).
    s.dprobs = cv.take(P), s.dscores = a.scores;
    s.lora_du = r > 0 ? cv.take(N * r) : nullptr;
    s.frozen_ln_w = r > 0 ? cv.take(C) : nullptr;
    s.frozen_ln_b = r > 0 ? cv.take(C) : nullptr;
  }
}

}  // namespace

void EncoderActs::resize(Backend& be, const BertConfig& c, int B, int T, bool training,
                         const BackwardPlan& plan) {
  if (plan.first_layer < 0 || plan.first_layer > c.num_hidden_layers ||
      (plan.embeddings && plan.first_layer != 0))
    fail("backward plan: first layer {} of {} layers, embeddings {}: the embeddings backward "
         "needs every layer's backward", plan.first_layer, c.num_hidden_layers, plan.embeddings);
  if (B == B_ && T == T_ && !packed_ && training == training_ && plan == plan_ &&
      C_ == size_t(c.hidden_size) && L_ == size_t(c.num_hidden_layers) &&
      I_ == size_t(c.intermediate_size) && lora_r_ == lora.r &&
      lora_drop_ == (lora.dropout > 0.0f) && buf_.backend() == &be)
    return;
  allocate(be, c, B, T, training, plan, 0);
}

void EncoderActs::resize_packed(Backend& be, const BertConfig& c, int B, int T, int rows) {
  if (B == B_ && T == T_ && rows == N_ && packed_ && C_ == size_t(c.hidden_size) &&
      L_ == size_t(c.num_hidden_layers) && I_ == size_t(c.intermediate_size) &&
      lora_r_ == lora.r && lora_drop_ == (lora.dropout > 0.0f) && buf_.backend() == &be)
    return;
  allocate(be, c, B, T, false, BackwardPlan{}, rows);
}

void EncoderActs::allocate(Backend& be, const BertConfig& c, int B, int T, bool training,
                           const BackwardPlan& plan, int packed_rows) {
  Carver count(nullptr);
  carve(*this, count, c, B, T, training, plan, packed_rows);
  // Grow only: fine-tuning batches change T every step (dynamic padding). Every activation is
  // written before it is read, so the buffer needs no clearing.
  // In host memory a new block grows by half at least: eval sorts examples by length, so T grew
  // at nearly every batch, and each new block (10-30 MB at BERT-mini B32, an mmap of its own) was
  // faulted in page by page: half the CPU time of an int8 eval of SST-2 dev. Pages past what a
  // batch uses are never touched, so the extra is address space, not memory. Device memory is
  // taken as asked.
  size_t want = count.used();
  if (want > buf_.capacity() && be.accepts_host_pointers())
    want = std::max(want, buf_.capacity() + buf_.capacity() / 2);
  Carver cv(buf_.ensure(be, want));
  carve(*this, cv, c, B, T, training, plan, packed_rows);
  B_ = B, T_ = T, training_ = training, plan_ = plan;
  packed_ = packed_rows > 0;
  N_ = packed_ ? packed_rows : B * T;
  C_ = c.hidden_size, L_ = c.num_hidden_layers, I_ = c.intermediate_size;
  lora_r_ = lora.r, lora_drop_ = lora.dropout > 0.0f;
}

void check_encoder_inputs(const BertConfig& c, const EncoderInputs& in) {
  if (in.T > c.max_position_embeddings)
    fail("sequence length {} exceeds max_position_embeddings {}", in.T,
         c.max_position_embeddings);
  if (in.packed()) {
    if (in.attention_mask) fail("a packed batch takes no attention_mask");
    for (int b = 0; b < in.B; ++b) {
      const int len = in.cu_seqlens[b + 1] - in.cu_seqlens[b];
      if (len < 1 || len > in.T)
        fail("packed batch: sequence {} has {} rows, outside [1, T = {}]", b, len, in.T);
    }
    if (in.cu_seqlens[0] != 0) fail("packed batch: cu_seqlens[0] = {}, not 0", in.cu_seqlens[0]);
  }
  const size_t N = size_t(in.rows());
  for (size_t i = 0; i < N; ++i) {
    if (in.input_ids[i] < 0 || in.input_ids[i] >= c.vocab_size)
      fail("input_ids[{}] = {} is outside the vocabulary [0, {})", i, in.input_ids[i],
           c.vocab_size);
    if (in.token_type_ids && (in.token_type_ids[i] < 0 || in.token_type_ids[i] >= c.type_vocab_size))
      fail("token_type_ids[{}] = {} is outside [0, type_vocab_size {})", i, in.token_type_ids[i],
           c.type_vocab_size);
  }
}

void encoder_forward(Backend& be, const BertConfig& c, const BertParams& w, EncoderActs& a,
                     const EncoderInputs& in, const int32_t* position_ids, BertQuant* q) {
  const int B = in.B, T = in.T, C = c.hidden_size, N = in.rows();
  if (in.packed() && a.training()) fail("a packed batch is for inference only");
  embeddings_forward(be, a.emb, in.input_ids, position_ids, in.token_type_ids, w.word_emb,
                     w.pos_emb, w.type_emb, w.emb_ln_w, w.emb_ln_b, N, C, c.layer_norm_eps,
                     q ? &q->emb : nullptr);
  embeddings_dropout(be, a, a.emb.out, size_t(N) * C);
  const float* x = a.emb.out;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    encoder_layer_forward(be, a.layers[l], a.scores, x, a.mask_add, w.layers[l],
                          layer_dims(c, B, T, a, l, in.cu_seqlens),
                          q ? &q->layers[size_t(l)] : nullptr);
    x = a.layers[l].out;
  }
  a.hidden = x;
  // Pooler: dense + tanh on the [CLS] row of each sequence (rows T·C apart; packed, gathered).
  const float* cls = x;
  int cls_stride = T * C;
  if (in.packed()) {
    be.gather_rows(a.pooled, x, in.first_rows, B, C);
    cls = a.pooled, cls_stride = C;
  }
  linear_forward(be, a.pooled_pre, cls, w.pooler_w, w.pooler_b, B, C, C, cls_stride,
                 q ? q->pooler : nullptr);
  if (w.pooler_lora) {
    const LayerDims d = layer_dims(c, B, T, a, 0);  // the adapters' r, scaling, dropout
    lora_forward(be, a.pooled_pre, a.pooler_lora_u, a.layers[0].lora_xd, cls, w.pooler_lora.A,
                 w.pooler_lora.B, B, C, C, a.lora.r, a.lora.scaling, cls_stride, d.lora.dropout,
                 pooler_lora_seed(c, a));
  }
  be.tanh_forward(a.pooled, a.pooled_pre, size_t(B) * C);
  if (a.training()) {
    be.fill(a.dhidden, 0.0f, size_t(N) * C);
    be.fill(a.dpooled, 0.0f, size_t(B) * C);
  }
}

void encoder_backward(Backend& be, const BertConfig& c, const BertParams& dw, EncoderActs& a,
                      const BertParams& w, const EncoderInputs& in, const int32_t* position_ids,
                      BertQuant* q) {
  const int B = in.B, T = in.T, C = c.hidden_size, N = B * T;
  const size_t NC = size_t(N) * C;
  // Pooler.
  be.fill(a.dpooled_pre, 0.0f, size_t(B) * C);
  be.tanh_backward(a.dpooled_pre, a.pooled, a.dpooled, size_t(B) * C);
  linear_backward(be, a.dhidden, dw.pooler_w, dw.pooler_b, a.dpooled_pre, a.hidden, w.pooler_w, B,
                  C, C, T * C, T * C, q ? q->pooler : nullptr);
  if (w.pooler_lora)
    lora_backward(be, a.dhidden, dw.pooler_lora.A, dw.pooler_lora.B, a.scratch.lora_du,
                  a.layers[0].lora_xd, a.dpooled_pre, a.hidden, a.pooler_lora_u, w.pooler_lora.A,
                  w.pooler_lora.B, B, C, C, a.lora.r, a.lora.scaling, T * C, T * C,
                  layer_dims(c, B, T, a, 0).lora.dropout, pooler_lora_seed(c, a));
  // Layers, last to first, down to the first trainable one; dhidden and dnext ping-pong.
  const BackwardPlan& plan = a.plan();
  float* dout = a.dhidden;
  float* dinp = a.dnext;
  for (int l = c.num_hidden_layers - 1; l >= plan.first_layer; --l) {
    const float* inp = l > 0 ? a.layers[l - 1].out : a.emb.out;
    const LayerDims d = layer_dims(c, B, T, a, l);
    // Recompute: the shared work buffers still hold the last layer's forward; the others run
    // again on their kept input, with the same ops on the same values (so the same bits, and
    // the kept output is written over with what it holds).
    if (plan.recompute && l != c.num_hidden_layers - 1) {
      // A second forward would update the QAT observers twice a step; an int8 base (adapters
      // over it) has no observers and recomputes on its int8 kernels.
      if (q && q->mode() != QuantMode::kInt8)
        fail("activation recomputation (--recompute) is not supported with QAT");
      encoder_layer_forward(be, a.layers[l], a.scores, inp, a.mask_add, w.layers[l], d,
                            q ? &q->layers[size_t(l)] : nullptr);
    }
    be.fill(dinp, 0.0f, NC);
    encoder_layer_backward(be, dinp, dw.layers[l], a.scratch, dout, inp, a.layers[l], w.layers[l],
                           d, q ? &q->layers[size_t(l)] : nullptr);
    std::swap(dout, dinp);
  }
  if (!plan.embeddings) return;
  embeddings_dropout(be, a, dout, NC);
  embeddings_backward(be, a.demb_sum, dw.word_emb, dw.pos_emb, dw.type_emb, dw.emb_ln_w,
                      dw.emb_ln_b, dout, a.emb, in.input_ids, position_ids, in.token_type_ids,
                      w.emb_ln_w, N, C, q ? &q->emb : nullptr);
}

}  // namespace bertrt
