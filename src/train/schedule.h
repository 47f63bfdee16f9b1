// Learning-rate schedule: linear warm-up then linear decay to 0 (Hugging Face
// get_linear_schedule_with_warmup; the original BERT optimization.py has the same shape).
#pragma once

#include <cstdint>

namespace bertrt {

// The rate for the update after `step` updates were taken (step = 0 for the first update), as a
// LambdaLR stepped after each optimizer step:
//   base_lr · step / max(1, warmup)                               for step < warmup,
//   base_lr · max(0, (total − step) / max(1, total − warmup))      otherwise.
// So with warmup > 0 the first update has rate 0, exactly as in Hugging Face.
float linear_schedule_lr(float base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps);

// ceil(total_steps · ratio) (Hugging Face TrainingArguments.get_warmup_steps), in double like
// Python. Throws bertrt::Error when ratio is outside [0, 1] or total_steps < 0.
int64_t warmup_steps_from_ratio(int64_t total_steps, double ratio);

}  // namespace bertrt
