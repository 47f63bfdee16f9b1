#include "model/embeddings.h"

#include "core/error.h"
#include "model/bert_quant.h"
#include "quant/fake_quant.h"

namespace bertrt {

namespace {

// out += the rows of `table` at ids, per-row int8 under `q` (fp32 otherwise).
void add_rows(Backend& be, float* out, const int32_t* ids, const float* table, int N, int C,
              EmbeddingQuant* q, EmbeddingTableQuant* t) {
  if (!q || !q->active()) {
    be.embedding_forward(out, ids, table, N, C);
    return;
  }
  const size_t NC = size_t(N) * C;
  if (q->mode == QuantMode::kInt8) {
    const Int8WeightView w8 = t->dev.on(be, t->w8.view(), /*pack=*/false);  // read by rows
    be.embedding_forward_s8(out, ids, w8.q, w8.scale, N, C, w8.rows);
    return;
  }
  // Fake-quant of the gathered rows: the per-row rule is local to a row, so this equals the rows
  // of the fake-quantized table (fake_quant.h).
  float* rows = t->rows.ensure(be, NC);
  be.fill(rows, 0.0f, NC);
  be.embedding_forward(rows, ids, table, N, C);
  fake_quant_weight(be, rows, t->mask.ensure(be, NC), t->scale.ensure(be, size_t(N)), rows, N, C);
  be.add(out, out, rows, NC);
}

// dtable += the rows of dsum at ids, through the table's STE mask under fake-quant.
void scatter_rows(Backend& be, float* dtable, const int32_t* ids, const float* dsum, int N, int C,
                  EmbeddingQuant* q, EmbeddingTableQuant* t) {
  if (!dtable) return;
  if (!q || !q->active()) {
    be.embedding_backward(dtable, ids, dsum, N, C);
    return;
  }
  if (q->mode != QuantMode::kFakeQuant)
    fail("embeddings backward: an int8 model is inference-only");
  const size_t NC = size_t(N) * C;
  float* masked = q->dscratch.ensure(be, NC);
  be.fill(masked, 0.0f, NC);
  be.fake_quant_backward(masked, t->mask.data(), dsum, NC);
  be.embedding_backward(dtable, ids, masked, N, C);
}

}  // namespace

void embeddings_forward(Backend& be, const EmbeddingActs& a, const int32_t* input_ids,
                        const int32_t* position_ids, const int32_t* token_type_ids,
                        const float* word_emb, const float* pos_emb, const float* type_emb,
                        const float* ln_w, const float* ln_b, int N, int C, float eps,
                        EmbeddingQuant* q) {
  be.fill(a.sum, 0.0f, static_cast<size_t>(N) * C);
  add_rows(be, a.sum, input_ids, word_emb, N, C, q, q ? &q->word : nullptr);
  add_rows(be, a.sum, position_ids, pos_emb, N, C, q, q ? &q->pos : nullptr);
  add_rows(be, a.sum, token_type_ids, type_emb, N, C, q, q ? &q->type : nullptr);
  be.layernorm_forward(a.out, a.mean, a.rstd, a.sum, ln_w, ln_b, N, C, eps);
}

void embeddings_backward(Backend& be, float* dsum, float* dword_emb, float* dpos_emb,
                         float* dtype_emb, float* dln_w, float* dln_b, const float* dout,
                         const EmbeddingActs& a, const int32_t* input_ids,
                         const int32_t* position_ids, const int32_t* token_type_ids,
                         const float* ln_w, int N, int C, EmbeddingQuant* q) {
  be.fill(dsum, 0.0f, static_cast<size_t>(N) * C);
  be.layernorm_backward(dsum, dln_w, dln_b, dout, a.sum, ln_w, a.mean, a.rstd, N, C);
  scatter_rows(be, dword_emb, input_ids, dsum, N, C, q, q ? &q->word : nullptr);
  scatter_rows(be, dpos_emb, position_ids, dsum, N, C, q, q ? &q->pos : nullptr);
  scatter_rows(be, dtype_emb, token_type_ids, dsum, N, C, q, q ? &q->type : nullptr);
}

}  // namespace bertrt
