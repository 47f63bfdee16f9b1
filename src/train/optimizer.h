// AdamW over the flat parameter layout. The moments m and v live in one buffer each, laid out like
// the parameters but holding only the TRAINABLE tensors (frozen ones get no optimizer state), so
// one step is one backend call per trainable tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/device_array.h"
#include "model/params.h"

namespace bertrt {

// kAdamW: torch.optim.AdamW (bias correction, eps 1e-8 by default, decoupled decay p *= 1 − lr·wd).
// kBert:  google-research/bert optimization.py AdamWeightDecayOptimizer: no bias correction,
//         eps 1e-6, decay inside the update (u = m/(√v + eps) + wd·p; p −= lr·u), decay 0.01
//         skipping LayerNorm and bias; its schedule is the BERT form (schedule.h) and its clipping
//         tf.clip_by_global_norm (clip.h).
enum class OptimizerKind { kAdamW, kBert };
const char* optimizer_name(OptimizerKind kind);  // "adamw", "bert"
// Throws bertrt::Error naming the valid names.
OptimizerKind parse_optimizer(const std::string& name);

class AdamW {
 public:
  // hyper.weight_decay applies to the tensors with ParamInfo::decay and 0 to the others (BERT
  // excludes LayerNorm weights and all biases: google-research/bert optimization.py,
  // _do_use_weight_decay). hyper.lr is ignored: step() takes the scheduled rate. `trainable`
  // (one flag per layout.params() entry, empty = all) selects the tensors that are updated and
  // get moments; `layout` must outlive the optimizer.
  AdamW(const ParamLayout& layout, const AdamWHyper& hyper, std::vector<bool> trainable = {});

  // One update at step t = step_count() + 1 of the trainable tensors of params [layout.total()]
  // from grads [same], in place. Gradients are used as given (clip them first).
  void step(Backend& backend, float* params, const float* grads, float lr);

  int64_t step_count() const { return t_; }
  const AdamWHyper& hyper() const { return hyper_; }
  // The moments' layout: the trainable tensors, same names and shapes, their own offsets.
  const ParamLayout& moment_layout() const { return moments_; }
  // The moments, [moment_layout().total()] each, on the host (brought back from the backend):
  // copies, and pointers valid until the next step (checkpoints). Restore with set_state.
  std::vector<float> m() const { return {m_.host(), m_.host() + m_.size()}; }
  std::vector<float> v() const { return {v_.host(), v_.host() + v_.size()}; }
  const float* host_m() const { return m_.host(); }
  const float* host_v() const { return v_.host(); }
  // Throws bertrt::Error when a buffer's size is not moment_layout().total() or t < 0.
  void set_state(std::vector<float> m, std::vector<float> v, int64_t t);

 private:
  const ParamLayout& layout_;
  ParamLayout moments_;
  std::vector<size_t> param_offset_;  // per moment tensor: its offset in the parameter buffer
  AdamWHyper hyper_;
  HostDeviceBuffer m_, v_;  // on the backend of the last step
  bool populated_ = false;  // the first step on host memory has mapped in what it writes
  int64_t t_ = 0;
};

}  // namespace bertrt
