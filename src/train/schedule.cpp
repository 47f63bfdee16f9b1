#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace bertrt {

const char* schedule_name(ScheduleKind kind) {
  return kind == ScheduleKind::kBert ? "linear_bert" : "linear_hf";
}

ScheduleKind parse_schedule(const std::string& name) {
  if (name == "linear_hf") return ScheduleKind::kHuggingFace;
  if (name == "linear_bert") return ScheduleKind::kBert;
  fail("unknown learning-rate schedule '{}' (expected linear_hf or linear_bert)", name);
}

float schedule_lr(ScheduleKind kind, float base_lr, int64_t step, int64_t warmup_steps,
                  int64_t total_steps) {
  double factor;
  if (step < warmup_steps)
    factor = static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_steps));
  else if (kind == ScheduleKind::kHuggingFace)
    factor =
        std::max(0.0, static_cast<double>(total_steps - step) /
                          static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps)));
  else  // tf.train.polynomial_decay(power=1, end 0, cycle=False): the step is capped at total
    factor = total_steps > 0 ? 1.0 - static_cast<double>(std::min(step, total_steps)) /
                                         static_cast<double>(total_steps)
                             : 0.0;
  return static_cast<float>(base_lr * factor);
}

float linear_schedule_lr(float base_lr, int64_t step, int64_t warmup_steps, int64_t total_steps) {
  return schedule_lr(ScheduleKind::kHuggingFace, base_lr, step, warmup_steps, total_steps);
}

int64_t warmup_steps_from_ratio(int64_t total_steps, double ratio) {
  if (!(ratio >= 0.0 && ratio <= 1.0)) fail("--warmup-ratio must be in [0, 1], got {}", ratio);
  if (total_steps < 0) fail("total training steps must be ≥ 0, got {}", total_steps);
  return static_cast<int64_t>(std::ceil(static_cast<double>(total_steps) * ratio));
}

}  // namespace bertrt
