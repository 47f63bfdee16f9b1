#include "model/embeddings.h"

#include <algorithm>

namespace bertrt {

void embeddings_forward(Backend& be, const EmbeddingActs& a, const int32_t* input_ids,
                        const int32_t* position_ids, const int32_t* token_type_ids,
                        const float* word_emb, const float* pos_emb, const float* type_emb,
                        const float* ln_w, const float* ln_b, int N, int C, float eps) {
  std::fill(a.sum, a.sum + static_cast<size_t>(N) * C, 0.0f);
  be.embedding_forward(a.sum, input_ids, word_emb, N, C);
  be.embedding_forward(a.sum, position_ids, pos_emb, N, C);
  be.embedding_forward(a.sum, token_type_ids, type_emb, N, C);
  be.layernorm_forward(a.out, a.mean, a.rstd, a.sum, ln_w, ln_b, N, C, eps);
}

void embeddings_backward(Backend& be, float* dsum, float* dword_emb, float* dpos_emb,
                         float* dtype_emb, float* dln_w, float* dln_b, const float* dout,
                         const EmbeddingActs& a, const int32_t* input_ids,
                         const int32_t* position_ids, const int32_t* token_type_ids,
                         const float* ln_w, int N, int C) {
  std::fill(dsum, dsum + static_cast<size_t>(N) * C, 0.0f);
  be.layernorm_backward(dsum, dln_w, dln_b, dout, a.sum, ln_w, a.mean, a.rstd, N, C);
  if (dword_emb) be.embedding_backward(dword_emb, input_ids, dsum, N, C);
  if (dpos_emb) be.embedding_backward(dpos_emb, position_ids, dsum, N, C);
  if (dtype_emb) be.embedding_backward(dtype_emb, token_type_ids, dsum, N, C);
}

}  // namespace bertrt
