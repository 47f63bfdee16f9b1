#include "train/finetune_setup.h"

#include <fmt/format.h>

#include "core/error.h"
#include "io/model_io.h"
#include "train/schedule.h"

namespace bertrt {

int64_t finetune_steps_per_epoch(const FinetuneHyper& h, size_t train_rows) {
  if (h.batch_size < 1) fail("batch size must be ≥ 1, got {}", h.batch_size);
  return int64_t((train_rows + size_t(h.batch_size) - 1) / size_t(h.batch_size));
}

int64_t finetune_total_steps(const FinetuneHyper& h, size_t train_rows) {
  return h.max_steps > 0 ? h.max_steps : finetune_steps_per_epoch(h, train_rows) * h.epochs;
}

OptimOptions finetune_optim_options(const FinetuneHyper& h, int64_t total_steps) {
  OptimOptions oo;
  oo.learning_rate = h.learning_rate;
  oo.total_steps = total_steps;
  oo.warmup_steps = warmup_steps_from_ratio(total_steps, h.warmup_ratio);
  oo.weight_decay = h.weight_decay;
  return oo;
}

void rename_source_architecture(std::map<std::string, std::string>& meta) {
  if (const auto it = meta.find("architecture"); it != meta.end()) {
    meta["source_architecture"] = it->second;
    meta.erase(it);
  }
}

std::map<std::string, std::string> finetuned_metadata(std::map<std::string, std::string> base,
                                                      const TaskDefinition& task,
                                                      int64_t total_steps,
                                                      const std::string& source,
                                                      const std::string& run_key) {
  rename_source_architecture(base);
  base["source"] = source;
  base["finetune_task"] = task.name;
  base["finetune_steps"] = std::to_string(total_steps);
  base["task"] = task_definition_json(task);
  base.erase(run_key);
  return base;
}

void prepare_finetune_quant(BertModel& model, bool qat, const QatConfig& config,
                            const std::string& model_path, std::string* note) {
  if (model.quant_mode() == QuantMode::kInt8)
    fail("{}: an int8 model is for inference only; fine-tune its float or fake-quant source",
         model_path);
  if (qat) {
    model.enable_qat(config);
    return;
  }
  if (model.quant()) {
    if (note)
      *note = fmt::format(
          "{} is a fake-quant (QAT) model; fine-tuning it in fp32 (add --qat int8 to continue "
          "quantization-aware training)",
          model_path);
    model.disable_quantization();
  }
}

void save_finetuned_model(const std::string& path, BertModel& model, const Tokenizer& tokenizer,
                          std::map<std::string, std::string> metadata, bool qat,
                          const std::string& fake_quant_path) {
  if (!qat) {
    save_model(path, model, tokenizer, metadata);
    return;
  }
  metadata["quantization.source"] = "qat";
  model.quant()->set_observers_frozen(true);  // the ranges the int8 model will use
  if (!fake_quant_path.empty()) save_model(fake_quant_path, model, tokenizer, metadata);
  model.convert_to_int8();
  save_model(path, model, tokenizer, metadata);
}

}  // namespace bertrt
