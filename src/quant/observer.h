// The activation range observer of quantization-aware training: PyTorch's
// torch.ao.quantization.MovingAverageMinMaxObserver (per tensor, quint8 [0, 255], affine), plus the
// freeze that QAT recipes apply after some steps (torch.ao.quantization.disable_observer).
//
//   first batch:  min = batch_min, max = batch_max
//   later:        min = min + c·(batch_min − min),  max = max + c·(batch_max − max)
// in float32, c = momentum rounded to float (torch's averaging_constant, default 0.01;
// `--qat-observer-momentum`), the product rounded before the add as torch's two tensor ops do.
// The range lives where it is observed: observe(be, …) runs the update as a backend op
// (Backend::observe_min_max), so a QAT step reads nothing back; min()/max()/qparams() bring it to
// the host when asked (saving, export).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/device_array.h"
#include "quant/qparams.h"

namespace bertrt {

class ActivationObserver {
 public:
  // momentum in (0, 1]; throws bertrt::Error otherwise (1 keeps only the last batch).
  explicit ActivationObserver(float momentum = 0.01f);

  // Folds in one batch's range; ignored while frozen. Throws for a non-finite or inverted range
  // (a NaN in the activations would otherwise poison the scale for good).
  void observe(float batch_min, float batch_max);
  // The same on `be` from min_max results in its memory: the batch range is the min of batch[2r]
  // and the max of batch[2r + 1] over r < parts. Errors surface at the backend's next sync.
  void observe(Backend& be, const float* batch, int parts);
  // The range [min, max] in `be`'s memory (Backend::fake_quant_observed reads its qparams there).
  const float* range(Backend& be) { return range_.on(be); }

  // The scale and zero point of the current range (affine_qparams, [0, 255]); {1, 0} before the
  // first batch, as torch's FakeQuantize buffers start.
  QParams qparams() const;

  void set_frozen(bool frozen) { frozen_ = frozen; }
  bool frozen() const { return frozen_; }
  bool initialized() const { return updates_ > 0; }
  float min() const { return range_.host()[0]; }
  float max() const { return range_.host()[1]; }
  float momentum() const { return momentum_; }
  int64_t updates() const { return updates_; }  // batches folded in so far

  // Restores a saved state (checkpoints / the exported model): range, count and frozen flag.
  void restore(float min_val, float max_val, int64_t updates, bool frozen);

 private:
  float momentum_;
  HostDeviceBuffer range_;  // [min, max]
  int64_t updates_ = 0;
  bool frozen_ = false;
};

}  // namespace bertrt
