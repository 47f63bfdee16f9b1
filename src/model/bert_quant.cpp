#include "model/bert_quant.h"

#include "core/error.h"

namespace bertrt {

std::vector<LinearSite> linear_sites(const BertConfig& c, const HeadsConfig& heads) {
  const int H = c.hidden_size, I = c.intermediate_size;
  std::vector<LinearSite> s;
  auto add = [&](const std::string& name, int out, int in) {
    s.push_back({name, name + ".weight", name + ".bias", out, in});
  };
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    add(p + ".attention.self.query", H, H);
    add(p + ".attention.self.key", H, H);
    add(p + ".attention.self.value", H, H);
    add(p + ".attention.output.dense", H, H);
    add(p + ".intermediate.dense", I, H);
    add(p + ".output.dense", H, I);
  }
  add("bert.pooler.dense", H, H);
  if (heads.mlm) {
    add("cls.predictions.transform.dense", H, H);
    s.push_back({"cls.predictions.decoder", "bert.embeddings.word_embeddings.weight",
                 "cls.predictions.bias", c.vocab_size, H});
  }
  if (heads.nsp) add("cls.seq_relationship", 2, H);
  const HeadKind kind = heads.resolved_kind();
  if (heads.classifier()) add("classifier", heads.num_labels(), H);
  if (kind == HeadKind::kQuestionAnswering) add("qa_outputs", 2, H);
  return s;
}

BertQuant::BertQuant(const BertConfig& config, const HeadsConfig& heads, QuantMode mode,
                     const QatConfig& qat)
    : mode_(mode), qat_(qat) {
  ActivationObserver check(qat.observer_momentum);  // throws for a momentum outside (0, 1]
  (void)check;
  if (qat.freeze_observers_steps < 0)
    fail("observer freeze step {}: expected ≥ 0 (0 = never frozen)", qat.freeze_observers_steps);
  emb.int8 = qat.int8_embeddings;
  bind(config, heads);
  set_mode(mode);
}

void BertQuant::set_mode(QuantMode mode) {
  mode_ = mode;
  for (auto& [name, q] : linears_) q.mode = mode;
  emb.mode = mode;
}

void BertQuant::bind(const BertConfig& config, const HeadsConfig& heads) {
  std::map<std::string, QuantLinear> kept;
  for (const LinearSite& s : linear_sites(config, heads)) {
    auto it = linears_.find(s.name);
    if (it != linears_.end()) {
      kept.emplace(s.name, std::move(it->second));
    } else {
      QuantLinear q;
      q.mode = mode_;
      q.observer = ActivationObserver(qat_.observer_momentum);
      kept.emplace(s.name, std::move(q));
    }
  }
  linears_ = std::move(kept);
  for (auto& [name, q] : linears_) q.backward = &backward_scratch;
  auto opt = [&](const std::string& name) -> QuantLinear* {
    auto it = linears_.find(name);
    return it == linears_.end() ? nullptr : &it->second;
  };
  layers.assign(size_t(config.num_hidden_layers), LayerQuant{});
  for (int l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    LayerQuant& L = layers[size_t(l)];
    L.query = &at(p + ".attention.self.query");
    L.key = &at(p + ".attention.self.key");
    L.value = &at(p + ".attention.self.value");
    L.attn_out = &at(p + ".attention.output.dense");
    L.inter = &at(p + ".intermediate.dense");
    L.out = &at(p + ".output.dense");
  }
  pooler = &at("bert.pooler.dense");
  mlm_dense = opt("cls.predictions.transform.dense");
  mlm_decoder = opt("cls.predictions.decoder");
  nsp = opt("cls.seq_relationship");
  cls = opt("classifier");
  qa = opt("qa_outputs");
}

QuantLinear& BertQuant::at(const std::string& name) {
  auto it = linears_.find(name);
  if (it == linears_.end()) fail("quantization: the model has no Linear named '{}'", name);
  return it->second;
}

void BertQuant::begin_forward(bool training) {
  if (mode_ == QuantMode::kFakeQuant && training) {
    ++training_forwards_;
    if (qat_.freeze_observers_steps > 0 && training_forwards_ > qat_.freeze_observers_steps)
      set_observers_frozen(true);
  }
  for (auto& [name, q] : linears_)
    q.observe = mode_ == QuantMode::kCalibrate ||
                (mode_ == QuantMode::kFakeQuant && training && !q.observer.frozen());
}

void BertQuant::set_observers_frozen(bool frozen) {
  for (auto& [name, q] : linears_) q.observer.set_frozen(frozen);
}

bool BertQuant::observers_frozen() const {
  for (const auto& [name, q] : linears_)
    if (!q.observer.frozen()) return false;
  return !linears_.empty();
}

}  // namespace bertrt
