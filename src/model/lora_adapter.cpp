#include "model/lora_adapter.h"

#include "core/error.h"

namespace bertrt {

bool adapter_tensor(const std::string& name) {
  return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos ||
         name.rfind("classifier.", 0) == 0 || name.rfind("qa_outputs.", 0) == 0;
}

ParamLayout adapter_layout(const BertConfig& config, const HeadsConfig& heads,
                           const LoraConfig& lora) {
  std::vector<ParamInfo> ps;
  const ParamLayout all = bert_param_layout(config, heads, &lora);
  for (const ParamInfo& p : all.params())
    if (adapter_tensor(p.name)) ps.push_back(ParamInfo{p.name, p.shape, 0, 0, p.decay});
  return ParamLayout(std::move(ps));
}

LoraAdapter::LoraAdapter(const BertConfig& config, HeadsConfig heads, LoraConfig lora,
                         const std::string& where)
    : config_(config), heads_(std::move(heads)), lora_(std::move(lora)) {
  heads_.validate();
  heads_.kind = heads_.resolved_kind();
  const bool embedding = heads_.embedding && heads_.embedding->dense.empty() &&
                         heads_.kind == HeadKind::kNone;
  if (heads_.mlm || heads_.nsp || (heads_.embedding && !embedding) ||
      (heads_.kind == HeadKind::kNone && !embedding))
    fail("{}: expected a task head (classification, regression, tagging or question answering) "
         "or a sentence-embedding head without Dense modules beside the adapters",
         where);
  if (heads_.embedding)
    heads_.embedding->validate(config.hidden_size, config.max_position_embeddings);
  lora_sites(config_, lora_, where);  // r, alpha, dropout, targets: valid on this base
  layout_ = adapter_layout(config_, heads_, lora_);
  weights_.assign(layout_.total(), 0.0f);
}

}  // namespace bertrt
