#include "train/optimizer.h"

#include "core/error.h"
#include "core/host_floats.h"

namespace bertrt {

const char* optimizer_name(OptimizerKind kind) {
  return kind == OptimizerKind::kBert ? "bert" : "adamw";
}

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "adamw") return OptimizerKind::kAdamW;
  if (name == "bert") return OptimizerKind::kBert;
  fail("unknown optimizer '{}' (expected adamw or bert)", name);
}

static std::vector<ParamInfo> trainable_infos(const ParamLayout& layout,
                                              const std::vector<bool>& trainable) {
  if (!trainable.empty() && trainable.size() != layout.params().size())
    fail("AdamW: {} trainable flags for {} parameter tensors", trainable.size(),
         layout.params().size());
  std::vector<ParamInfo> out;
  for (size_t i = 0; i < layout.params().size(); ++i)
    if (trainable.empty() || trainable[i]) out.push_back(layout.params()[i]);
  return out;
}

AdamW::AdamW(const ParamLayout& layout, const AdamWHyper& hyper, std::vector<bool> trainable)
    : layout_(layout), moments_(trainable_infos(layout, trainable)), hyper_(hyper) {
  m_.assign(moments_.total(), 0.f);
  v_.assign(moments_.total(), 0.f);
  for (const ParamInfo& p : moments_.params()) param_offset_.push_back(layout_.at(p.name).offset);
}

void AdamW::step(Backend& backend, float* params, const float* grads, float lr) {
  ++t_;
  AdamWHyper h = hyper_;
  h.lr = lr;
  float* m = m_.on(backend);
  float* v = v_.on(backend);
  if (!populated_ && backend.accepts_host_pointers()) {
    // This step writes all of them: map their pages in at once (host_floats.h).
    populated_ = true;
    populate_for_write(m, m_.size());
    populate_for_write(v, v_.size());
    for (size_t i = 0; i < moments_.params().size(); ++i)
      populate_for_write(params + param_offset_[i], moments_.params()[i].numel);
  }
  for (size_t i = 0; i < moments_.params().size(); ++i) {
    const ParamInfo& p = moments_.params()[i];
    h.weight_decay = p.decay ? hyper_.weight_decay : 0.f;
    const size_t o = param_offset_[i];
    backend.adamw_step(params + o, m + p.offset, v + p.offset, grads + o, p.numel, h, t_);
  }
}

void AdamW::set_state(std::vector<float> m, std::vector<float> v, int64_t t) {
  if (m.size() != moments_.total() || v.size() != moments_.total())
    fail("AdamW state: moments hold {} and {} floats, the trainable layout {}", m.size(), v.size(),
         moments_.total());
  if (t < 0) fail("AdamW state: step count {} is negative", t);
  m_.assign(m.size(), 0.f);
  v_.assign(v.size(), 0.f);
  std::copy(m.begin(), m.end(), m_.host());
  std::copy(v.begin(), v.end(), v_.host());
  t_ = t;
}

}  // namespace bertrt
