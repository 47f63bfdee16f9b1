#include "model/params.h"

#include "core/error.h"

namespace bertrt {

ParamLayout::ParamLayout(std::vector<ParamInfo> params) : params_(std::move(params)) {
  constexpr size_t kAlign = 16;  // floats: 64 bytes, so every tensor starts on a cache line
  for (size_t i = 0; i < params_.size(); ++i) {
    ParamInfo& p = params_[i];
    p.numel = 1;
    for (int64_t d : p.shape) p.numel *= static_cast<size_t>(d);
    p.offset = total_;
    total_ += (p.numel + kAlign - 1) / kAlign * kAlign;
    if (!index_.emplace(p.name, i).second) fail("parameter '{}' defined twice", p.name);
  }
}

const ParamInfo* ParamLayout::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &params_[it->second];
}

const ParamInfo& ParamLayout::at(const std::string& name) const {
  const ParamInfo* p = find(name);
  if (!p) fail("no parameter named '{}'", name);
  return *p;
}

ParamLayout bert_param_layout(const BertConfig& c, const HeadsConfig& heads,
                              const LoraConfig* lora) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  std::vector<ParamInfo> ps;
  auto add = [&](std::string name, std::vector<int64_t> shape, bool decay) {
    ps.push_back(ParamInfo{std::move(name), std::move(shape), 0, 0, decay});
  };
  auto linear = [&](const std::string& prefix, int64_t out, int64_t in) {
    add(prefix + ".weight", {out, in}, true);
    add(prefix + ".bias", {out}, false);
  };
  auto layernorm = [&](const std::string& prefix) {
    add(prefix + ".weight", {H}, false);
    add(prefix + ".bias", {H}, false);
  };
  add("bert.embeddings.word_embeddings.weight", {c.vocab_size, H}, true);
  add("bert.embeddings.position_embeddings.weight", {c.max_position_embeddings, H}, true);
  add("bert.embeddings.token_type_embeddings.weight", {c.type_vocab_size, H}, true);
  layernorm("bert.embeddings.LayerNorm");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    linear(p + ".attention.self.query", H, H);
    linear(p + ".attention.self.key", H, H);
    linear(p + ".attention.self.value", H, H);
    linear(p + ".attention.output.dense", H, H);
    layernorm(p + ".attention.output.LayerNorm");
    linear(p + ".intermediate.dense", I, H);
    linear(p + ".output.dense", H, I);
    layernorm(p + ".output.LayerNorm");
  }
  linear("bert.pooler.dense", H, H);
  if (heads.mlm) {
    linear("cls.predictions.transform.dense", H, H);
    add("cls.predictions.transform.LayerNorm.weight", {H}, false);
    add("cls.predictions.transform.LayerNorm.bias", {H}, false);
    add("cls.predictions.bias", {c.vocab_size}, false);
  }
  if (heads.nsp) linear("cls.seq_relationship", 2, H);
  if (heads.classifier()) linear("classifier", heads.num_labels(), H);
  if (heads.resolved_kind() == HeadKind::kQuestionAnswering) linear("qa_outputs", 2, H);
  if (heads.embedding) {  // sentence-transformers' Dense modules: "2_Dense.linear.weight", ...
    for (const DenseConfig& d : heads.embedding->dense) {
      add(d.path + ".linear.weight", {d.out_features, d.in_features}, true);
      if (d.bias) add(d.path + ".linear.bias", {d.out_features}, false);
    }
  }
  if (lora)
    for (const LoraSite& s : lora_sites(c, *lora, "LoRA")) {
      add(s.a(), {lora->r, s.in_f}, true);
      add(s.b(), {s.out_f, lora->r}, true);
    }
  return ParamLayout(std::move(ps));
}

}  // namespace bertrt
