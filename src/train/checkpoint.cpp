#include "train/checkpoint.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace bertrt {

namespace {

std::map<std::string, double> hyper_of(const Trainer& t) {
  const OptimOptions& o = t.options();
  return {{"lr", o.learning_rate},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"max_grad_norm", o.max_grad_norm},
          {"bias_correction", o.hyper().bias_correction ? 1.0 : 0.0},
          {"gradient_accumulation_steps", double(o.gradient_accumulation_steps)},
          {"optimizer_updates", double(t.optimizer().step_count())},
          {"skipped_steps", double(t.skipped_steps())}};
}

std::map<std::string, std::string> schedule_of(const Trainer& t) {
  const OptimOptions& o = t.options();
  return {{"kind", schedule_name(o.schedule())},
          {"warmup_steps", std::to_string(o.warmup_steps)},
          {"total_steps", std::to_string(o.total_steps)}};
}

TensorRecord moment_record(const std::string& prefix, const ParamInfo& p, const float* base) {
  TensorRecord r;
  r.name = prefix + p.name;
  r.shape = p.shape;
  r.dtype = DType::f32;
  r.data = reinterpret_cast<const uint8_t*>(base + p.offset);
  r.nbytes = p.numel * sizeof(float);
  return r;
}

}  // namespace

TrainingState capture_training_state(const Trainer& trainer, std::vector<uint8_t> data_state,
                                     uint64_t data_cursor) {
  TrainingState s;
  s.step = trainer.steps_done();
  s.optimizer = optimizer_name(trainer.options().optimizer);
  s.hyper = hyper_of(trainer);
  s.schedule = schedule_of(trainer);
  s.rng_state = std::move(data_state);
  s.data_cursor = data_cursor;
  const AdamW& opt = trainer.optimizer();
  for (const ParamInfo& p : opt.moment_layout().params())
    s.optimizer_tensors.push_back(moment_record("exp_avg.", p, opt.host_m()));
  for (const ParamInfo& p : opt.moment_layout().params())
    s.optimizer_tensors.push_back(moment_record("exp_avg_sq.", p, opt.host_v()));
  return s;
}

std::vector<std::string> training_state_mismatches(const Trainer& trainer,
                                                   const TrainingState& state) {
  std::vector<std::string> out;
  const std::string kind = optimizer_name(trainer.options().optimizer);
  if (state.optimizer != kind)
    out.push_back(fmt::format("optimizer: checkpoint {}, now {}", state.optimizer, kind));
  // Counters are state, not options.
  for (const auto& [key, now] : hyper_of(trainer)) {
    if (key == "optimizer_updates" || key == "skipped_steps") continue;
    auto it = state.hyper.find(key);
    // Values went through float → double both times, so equality is exact.
    if (it == state.hyper.end())
      out.push_back(fmt::format("{}: missing in the checkpoint, now {}", key, now));
    else if (it->second != now)
      out.push_back(fmt::format("{}: checkpoint {}, now {}", key, it->second, now));
  }
  for (const auto& [key, now] : schedule_of(trainer)) {
    auto it = state.schedule.find(key);
    const std::string then = it == state.schedule.end() ? "(missing)" : it->second;
    if (then != now) out.push_back(fmt::format("schedule {}: checkpoint {}, now {}", key, then, now));
  }
  return out;
}

static std::vector<float> moment(const TrainingState& s, const std::string& name,
                                 const ParamInfo& p, const std::string& path) {
  for (const TensorRecord& t : s.optimizer_tensors) {
    if (t.name != name) continue;
    if (t.dtype != DType::f32 || t.shape != p.shape)
      fail("{}: optimizer tensor '{}' is {} [{}], expected f32 [{}]", path, name,
           dtype_name(t.dtype), fmt::join(t.shape, ", "), fmt::join(p.shape, ", "));
    std::vector<float> v(p.numel);
    std::memcpy(v.data(), t.data, p.numel * sizeof(float));
    return v;
  }
  fail("{}: optimizer tensor '{}' is missing (was the run trained with other frozen parameters?)",
       path, name);
}

void restore_training_state(Trainer& trainer, const TrainingState& state, const std::string& path) {
  const std::vector<std::string> diff = training_state_mismatches(trainer, state);
  if (!diff.empty())
    fail("{}: the checkpoint was trained with other settings: {}", path, fmt::join(diff, "; "));
  auto number = [&](const char* key) -> int64_t {
    auto it = state.hyper.find(key);
    if (it == state.hyper.end()) fail("{}: training state lacks '{}'", path, key);
    return static_cast<int64_t>(it->second);
  };
  const AdamW& opt = trainer.optimizer();
  const ParamLayout& ml = opt.moment_layout();
  std::vector<float> m(ml.total(), 0.0f), v(ml.total(), 0.0f);
  for (const ParamInfo& p : ml.params()) {
    const std::vector<float> mp = moment(state, "exp_avg." + p.name, p, path);
    const std::vector<float> vp = moment(state, "exp_avg_sq." + p.name, p, path);
    std::copy(mp.begin(), mp.end(), m.begin() + p.offset);
    std::copy(vp.begin(), vp.end(), v.begin() + p.offset);
  }
  const size_t expected = 2 * ml.params().size();
  if (state.optimizer_tensors.size() != expected)
    fail("{}: {} optimizer tensors, expected {} (exp_avg and exp_avg_sq of each trainable "
         "tensor): were other parameters frozen?", path, state.optimizer_tensors.size(), expected);
  trainer.optimizer().set_state(std::move(m), std::move(v), number("optimizer_updates"));
  trainer.restore_counters(state.step, number("skipped_steps"));
}

}  // namespace bertrt
