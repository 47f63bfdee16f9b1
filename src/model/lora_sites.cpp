// Which Linears of a BERT an adapter attaches to: PEFT's target-name matching and each site's
// shape (the config side of model/lora.h; the ops are lora.cpp's).
#include "model/lora.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace bertrt {

bool lora_target_matches(const std::string& key, const std::string& target) {
  if (target.empty()) return false;
  if (key == target) return true;
  return key.size() > target.size() &&
         key.compare(key.size() - target.size(), target.size(), target) == 0 &&
         key[key.size() - target.size() - 1] == '.';
}

namespace {

// Every module of BertModel (+ its head) by Hugging Face name, with whether it is an nn.Linear
// LoRA may attach to: what PEFT's matching walks (model.named_modules()).
struct Module {
  std::string name;
  bool linear = false;  // an encoder or pooler Linear
  int out_f = 0, in_f = 0;
  bool head = false;    // modules_to_save: trained in full, never adapted
};

std::vector<Module> bert_modules(const BertConfig& c) {
  const int H = c.hidden_size, I = c.intermediate_size;
  std::vector<Module> m;
  auto other = [&](std::string name) { m.push_back({std::move(name)}); };
  auto linear = [&](std::string name, int out, int in) {
    m.push_back({std::move(name), true, out, in});
  };
  other("bert");
  other("bert.embeddings");
  for (const char* e : {"word_embeddings", "position_embeddings", "token_type_embeddings",
                        "LayerNorm", "dropout"})
    other(std::string("bert.embeddings.") + e);
  other("bert.encoder");
  other("bert.encoder.layer");
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l);
    other(p);
    other(p + ".attention");
    other(p + ".attention.self");
    linear(p + ".attention.self.query", H, H);
    linear(p + ".attention.self.key", H, H);
    linear(p + ".attention.self.value", H, H);
    other(p + ".attention.self.dropout");
    other(p + ".attention.output");
    linear(p + ".attention.output.dense", H, H);
    other(p + ".attention.output.LayerNorm");
    other(p + ".attention.output.dropout");
    other(p + ".intermediate");
    linear(p + ".intermediate.dense", I, H);
    other(p + ".intermediate.intermediate_act_fn");
    other(p + ".output");
    linear(p + ".output.dense", H, I);
    other(p + ".output.LayerNorm");
    other(p + ".output.dropout");
  }
  other("bert.pooler");
  linear("bert.pooler.dense", H, H);
  other("bert.pooler.activation");
  for (const char* h : {"classifier", "qa_outputs"}) m.push_back({h, false, 0, 0, true});
  other("dropout");
  return m;
}

}  // namespace

std::vector<std::string> lora_module_names(const BertConfig& config) {
  std::vector<std::string> names;
  for (Module& m : bert_modules(config)) names.push_back(std::move(m.name));
  return names;
}

std::vector<LoraSite> lora_sites(const BertConfig& config, const LoraConfig& lora,
                                 const std::string& where) {
  if (lora.r < 1) fail("{}: LoRA rank r = {}: expected ≥ 1", where, lora.r);
  if (!(std::isfinite(lora.alpha) && lora.alpha > 0))
    fail("{}: lora_alpha = {}: expected a finite number > 0", where, lora.alpha);
  if (!(lora.dropout >= 0.0f && lora.dropout < 1.0f))
    fail("{}: lora_dropout = {}: expected a probability in [0, 1)", where, lora.dropout);
  if (lora.target_modules.empty())
    fail("{}: no LoRA target modules (e.g. query,value)", where);
  const std::vector<Module> modules = bert_modules(config);
  std::vector<bool> chosen(modules.size(), false);
  for (const std::string& t : lora.target_modules) {
    std::vector<std::string> not_linear;
    bool any = false;
    for (size_t i = 0; i < modules.size(); ++i) {
      if (!lora_target_matches(modules[i].name, t)) continue;
      if (modules[i].head)
        fail("{}: target '{}' is the task head ({}), which is trained in full beside the "
             "adapters (PEFT's modules_to_save), not adapted",
             where, t, modules[i].name);
      if (!modules[i].linear) {
        not_linear.push_back(modules[i].name);
        continue;
      }
      chosen[i] = any = true;
    }
    if (!not_linear.empty())
      fail("{}: target '{}' matches {}{}, which is not a Linear: LoRA attaches to the Linears "
           "query, key, value, dense (attention output, intermediate, output and pooler), "
           "attention.output.dense, intermediate.dense, output.dense, pooler.dense",
           where, t, not_linear.front(),
           not_linear.size() > 1 ? fmt::format(" (and {} more)", not_linear.size() - 1) : "");
    if (!any)
      fail("{}: target '{}' matches no module of the model (expected a Linear's name or the end "
           "of one after a dot: query, key, value, dense, attention.output.dense, "
           "intermediate.dense, output.dense, pooler.dense, or a full name such as "
           "bert.encoder.layer.0.attention.self.query)",
           where, t);
  }
  std::vector<LoraSite> sites;
  for (size_t i = 0; i < modules.size(); ++i) {
    if (!chosen[i]) continue;
    const Module& m = modules[i];
    if (lora.r > std::min(m.in_f, m.out_f))
      fail("{}: LoRA rank r = {} exceeds {}'s width ({} × {}): expected r ≤ {}", where, lora.r,
           m.name, m.out_f, m.in_f, std::min(m.in_f, m.out_f));
    sites.push_back({m.name, m.out_f, m.in_f});
  }
  return sites;
}

}  // namespace bertrt
