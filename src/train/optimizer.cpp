#include "train/optimizer.h"

#include "core/error.h"

namespace bertrt {

AdamW::AdamW(const ParamLayout& layout, const AdamWHyper& hyper)
    : layout_(layout), hyper_(hyper), m_(layout.total(), 0.f), v_(layout.total(), 0.f) {}

void AdamW::step(Backend& backend, float* params, const float* grads, float lr) {
  ++t_;
  AdamWHyper h = hyper_;
  h.lr = lr;
  for (const ParamInfo& p : layout_.params()) {
    h.weight_decay = p.decay ? hyper_.weight_decay : 0.f;
    const size_t o = p.offset;
    backend.adamw_step(params + o, m_.data() + o, v_.data() + o, grads + o, p.numel, h, t_);
  }
}

void AdamW::set_state(std::vector<float> m, std::vector<float> v, int64_t t) {
  if (m.size() != layout_.total() || v.size() != layout_.total())
    fail("AdamW state: moments hold {} and {} floats, the parameter layout {}", m.size(), v.size(),
         layout_.total());
  if (t < 0) fail("AdamW state: step count {} is negative", t);
  m_ = std::move(m);
  v_ = std::move(v);
  t_ = t;
}

}  // namespace bertrt
