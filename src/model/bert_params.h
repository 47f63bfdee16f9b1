// Typed views of the flat parameter buffer (llm.c ParameterTensors): the same struct binds the
// weights or their gradients, so forward and backward read the same names.
#pragma once

#include <vector>

#include "model/params.h"

namespace bertrt {

// A Linear's LoRA adapter (model/lora.h): nullptr when the Linear has none.
struct LoraParams {
  float *A = nullptr, *B = nullptr;  // lora_A.weight [r, in], lora_B.weight [out, r]
  explicit operator bool() const { return A != nullptr; }
};

struct LayerParams {
  float *query_w, *query_b, *key_w, *key_b, *value_w, *value_b;  // [C, C], [C]
  float *attn_out_w, *attn_out_b;                                // attention.output.dense
  float *attn_ln_w, *attn_ln_b;                                  // attention.output.LayerNorm
  float *inter_w, *inter_b;                                      // intermediate.dense [I, C]
  float *out_w, *out_b;                                          // output.dense [C, I]
  float *out_ln_w, *out_ln_b;                                    // output.LayerNorm
  LoraParams query_lora, key_lora, value_lora, attn_out_lora, inter_lora, out_lora;
  bool has_lora() const {
    return query_lora || key_lora || value_lora || attn_out_lora || inter_lora || out_lora;
  }
};

struct BertParams {
  float *word_emb, *pos_emb, *type_emb;  // [V, C], [max_position_embeddings, C], [type_vocab, C]
  float *emb_ln_w, *emb_ln_b;
  std::vector<LayerParams> layers;
  float *pooler_w, *pooler_b;
  LoraParams pooler_lora;
  // Heads: nullptr when the model does not carry them.
  float *mlm_dense_w = nullptr, *mlm_dense_b = nullptr, *mlm_ln_w = nullptr, *mlm_ln_b = nullptr;
  float* mlm_bias = nullptr;  // cls.predictions.bias [V]; the decoder weight is word_emb (tied)
  float *nsp_w = nullptr, *nsp_b = nullptr;  // cls.seq_relationship [2, C]
  float *cls_w = nullptr, *cls_b = nullptr;  // classifier [num_labels, C] (1 for regression)
  float *qa_w = nullptr, *qa_b = nullptr;    // qa_outputs [2, C] (start, end)
};

// Points every field at its tensor inside `base` (a buffer of layout.total() floats).
BertParams bind_params(const ParamLayout& layout, const BertConfig& config, float* base);
// `w` (a base's views) with its adapters and heads taken from `layout` over `base` instead: the
// adapters and heads that layout holds, nullptr for those it does not (model/lora_adapter.h).
BertParams bind_adapter(BertParams w, const ParamLayout& layout, const BertConfig& config,
                        float* base);

}  // namespace bertrt
