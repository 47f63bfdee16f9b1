// BERT embeddings (paper §3.2, Fig. 2): word + position + token_type, then LayerNorm.
// N = B·T rows; C = hidden_size.
#pragma once

#include <cstdint>

#include "backends/backend.h"

namespace bertrt {

struct EmbeddingQuant;

struct EmbeddingActs {
  float* sum;   // [N, C] word + position + token_type (LayerNorm input)
  float* out;   // [N, C]
  float* mean;  // [N]
  float* rstd;  // [N]
};

// ids, position_ids, token_type_ids [N]. With an active EmbeddingQuant `q` (model/bert_quant.h)
// the rows read from each table are per-row int8: fake-quantized (QAT) or looked up in the int8
// tables (int8 model).
void embeddings_forward(Backend& be, const EmbeddingActs& a, const int32_t* input_ids,
                        const int32_t* position_ids, const int32_t* token_type_ids,
                        const float* word_emb, const float* pos_emb, const float* type_emb,
                        const float* ln_w, const float* ln_b, int N, int C, float eps,
                        EmbeddingQuant* q = nullptr);

// dout [N, C]; dsum [N, C] scratch (zeroed here); gradients accumulate into the d-tables.
void embeddings_backward(Backend& be, float* dsum, float* dword_emb, float* dpos_emb,
                         float* dtype_emb, float* dln_w, float* dln_b, const float* dout,
                         const EmbeddingActs& a, const int32_t* input_ids,
                         const int32_t* position_ids, const int32_t* token_type_ids,
                         const float* ln_w, int N, int C, EmbeddingQuant* q = nullptr);

}  // namespace bertrt
