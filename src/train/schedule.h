// Learning-rate schedules: linear warm-up then linear decay to 0, in the two published forms.
//   kHuggingFace: transformers get_linear_schedule_with_warmup (the decay spans total − warmup);
//   kBert:        google-research/bert optimization.py create_optimizer (polynomial_decay with
//                 power 1 over ALL total steps, overridden by the warm-up rate while in warm-up).
// They agree during warm-up and differ after it: at step s ≥ warmup, HF gives
// (total − s)/(total − warmup), BERT gives (total − s)/total.
#pragma once

#include <cstdint>
#include <string>

namespace bertrt {

enum class ScheduleKind { kHuggingFace, kBert };
const char* schedule_name(ScheduleKind kind);  // "linear_hf", "linear_bert"
// Throws bertrt::Error naming the valid names.
ScheduleKind parse_schedule(const std::string& name);

// The rate for the update after `step` updates were taken (step = 0 for the first update), as a
// LambdaLR stepped after each optimizer step (HF), or BERT's global_step read before its increment:
//   base_lr · step / max(1, warmup)                               for step < warmup,
//   base_lr · max(0, (total − step) / max(1, total − warmup))      otherwise (HF),
//   base_lr · (1 − min(step, total) / total)                       otherwise (BERT).
// So with warmup > 0 the first update has rate 0, exactly as in both references.
float schedule_lr(ScheduleKind kind, float base_lr, int64_t step, int64_t warmup_steps,
                  int64_t total_steps);

// The Hugging Face form (kept for callers that only know it).
float linear_schedule_lr(float base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps);

// ceil(total_steps · ratio) (Hugging Face TrainingArguments.get_warmup_steps), in double like
// Python. Throws bertrt::Error when ratio is outside [0, 1] or total_steps < 0.
int64_t warmup_steps_from_ratio(int64_t total_steps, double ratio);

}  // namespace bertrt
