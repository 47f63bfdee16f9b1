// AdamW over the flat parameter layout: the moments m and v live in buffers with the same layout
// as the parameters, so one step is one backend call per tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/backend.h"
#include "model/params.h"

namespace bertrt {

class AdamW {
 public:
  // hyper.weight_decay applies to the tensors with ParamInfo::decay and 0 to the others (BERT
  // excludes LayerNorm weights and all biases: google-research/bert optimization.py,
  // _do_use_weight_decay). hyper.lr is ignored: step() takes the scheduled rate.
  AdamW(const ParamLayout& layout, const AdamWHyper& hyper);

  // One update at step t = step_count() + 1 of params [layout.total()] from grads [same], in place.
  // Gradients are used as given (clip them first).
  void step(Backend& backend, float* params, const float* grads, float lr);

  int64_t step_count() const { return t_; }
  const AdamWHyper& hyper() const { return hyper_; }
  // The moments, [layout.total()] each (for checkpoints); restore with set_state.
  const std::vector<float>& m() const { return m_; }
  const std::vector<float>& v() const { return v_; }
  // Throws bertrt::Error when a buffer's size is not layout.total() or t < 0.
  void set_state(std::vector<float> m, std::vector<float> v, int64_t t);

 private:
  const ParamLayout& layout_;
  AdamWHyper hyper_;
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace bertrt
