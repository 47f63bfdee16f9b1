// A training run's state inside the model file (io/model_file.h TrainingState), so that a run
// killed after a save and resumed gives bit-identical weights to one that never stopped:
//   step               updates scheduled so far (skipped ones included)
//   optimizer          "adamw" | "bert"
//   hyper              lr, beta1, beta2, eps, weight_decay, max_grad_norm, bias_correction,
//                      gradient_accumulation_steps, optimizer_updates (AdamW's t: applied
//                      updates), skipped_steps
//   schedule           kind (linear_hf | linear_bert), warmup_steps, total_steps
//   rng_state          the data stream's state bytes (PretrainingStream::save_state)
//   data_cursor        examples consumed, for people reading `bertrt info` (the stream state is
//                      what restores)
//   optimizer_tensors  exp_avg.<param> and exp_avg_sq.<param>, f32, for every trainable tensor
//                      (frozen ones have no moments)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/model_file.h"
#include "train/trainer.h"

namespace bertrt {

// The trainer's state; the moment tensors point into trainer.optimizer() (valid until its next
// step), ready for save_model.
TrainingState capture_training_state(const Trainer& trainer, std::vector<uint8_t> data_state,
                                     uint64_t data_cursor);

// The differences between `state` and the trainer's options that would change the run (optimizer
// kind, hyper-parameters, schedule, accumulation), one "name: checkpoint X, now Y" line each.
std::vector<std::string> training_state_mismatches(const Trainer& trainer,
                                                   const TrainingState& state);

// Restores moments and counters into `trainer`. Throws bertrt::Error naming `path` when a moment
// tensor is missing or has the wrong shape/dtype, or when the state does not match the trainer's
// options (training_state_mismatches).
void restore_training_state(Trainer& trainer, const TrainingState& state, const std::string& path);

}  // namespace bertrt
