#include "model/bert_params.h"

#include <string>

namespace bertrt {

namespace {

// The fields that a layout may or may not hold: the adapters and the heads (w.layers sized).
void bind_optional(BertParams& w, const ParamLayout& layout, const BertConfig& config,
                   float* base) {
  auto opt = [&](const std::string& name) -> float* {
    const ParamInfo* p = layout.find(name);
    return p ? base + p->offset : nullptr;
  };
  auto lora = [&](const std::string& module) {
    return LoraParams{opt(module + ".lora_A.weight"), opt(module + ".lora_B.weight")};
  };
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    LayerParams& L = w.layers[size_t(l)];
    L.query_lora = lora(p + "attention.self.query");
    L.key_lora = lora(p + "attention.self.key");
    L.value_lora = lora(p + "attention.self.value");
    L.attn_out_lora = lora(p + "attention.output.dense");
    L.inter_lora = lora(p + "intermediate.dense");
    L.out_lora = lora(p + "output.dense");
  }
  w.pooler_lora = lora("bert.pooler.dense");
  w.mlm_dense_w = opt("cls.predictions.transform.dense.weight");
  w.mlm_dense_b = opt("cls.predictions.transform.dense.bias");
  w.mlm_ln_w = opt("cls.predictions.transform.LayerNorm.weight");
  w.mlm_ln_b = opt("cls.predictions.transform.LayerNorm.bias");
  w.mlm_bias = opt("cls.predictions.bias");
  w.nsp_w = opt("cls.seq_relationship.weight");
  w.nsp_b = opt("cls.seq_relationship.bias");
  w.cls_w = opt("classifier.weight");
  w.cls_b = opt("classifier.bias");
  w.qa_w = opt("qa_outputs.weight");
  w.qa_b = opt("qa_outputs.bias");
}

}  // namespace

BertParams bind_params(const ParamLayout& layout, const BertConfig& config, float* base) {
  auto at = [&](const std::string& name) { return base + layout.at(name).offset; };
  BertParams w;
  w.word_emb = at("bert.embeddings.word_embeddings.weight");
  w.pos_emb = at("bert.embeddings.position_embeddings.weight");
  w.type_emb = at("bert.embeddings.token_type_embeddings.weight");
  w.emb_ln_w = at("bert.embeddings.LayerNorm.weight");
  w.emb_ln_b = at("bert.embeddings.LayerNorm.bias");
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    LayerParams L;
    L.query_w = at(p + "attention.self.query.weight");
    L.query_b = at(p + "attention.self.query.bias");
    L.key_w = at(p + "attention.self.key.weight");
    L.key_b = at(p + "attention.self.key.bias");
    L.value_w = at(p + "attention.self.value.weight");
    L.value_b = at(p + "attention.self.value.bias");
    L.attn_out_w = at(p + "attention.output.dense.weight");
    L.attn_out_b = at(p + "attention.output.dense.bias");
    L.attn_ln_w = at(p + "attention.output.LayerNorm.weight");
    L.attn_ln_b = at(p + "attention.output.LayerNorm.bias");
    L.inter_w = at(p + "intermediate.dense.weight");
    L.inter_b = at(p + "intermediate.dense.bias");
    L.out_w = at(p + "output.dense.weight");
    L.out_b = at(p + "output.dense.bias");
    L.out_ln_w = at(p + "output.LayerNorm.weight");
    L.out_ln_b = at(p + "output.LayerNorm.bias");
    w.layers.push_back(L);
  }
  w.pooler_w = at("bert.pooler.dense.weight");
  w.pooler_b = at("bert.pooler.dense.bias");
  bind_optional(w, layout, config, base);
  return w;
}

BertParams bind_adapter(BertParams w, const ParamLayout& layout, const BertConfig& config,
                        float* base) {
  bind_optional(w, layout, config, base);
  return w;
}

}  // namespace bertrt
