#include "lora_flags.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "common.h"
#include "io/adapter_io.h"
#include "io/peft_adapter.h"

namespace bertrt::cli {

LoraConfig LoraOptions::config() const {
  LoraConfig c;
  c.r = r, c.alpha = alpha, c.dropout = dropout;
  std::stringstream ss(targets);
  for (std::string t; std::getline(ss, t, ',');) c.target_modules.push_back(t);
  return c;
}

std::string LoraOptions::where() const {
  return fmt::format("--lora-r {} --lora-target {}", r, targets);
}

void add_lora_flags(CLI::App* cmd, LoraOptions& o) {
  const char* group = "LoRA adapters (docs/how-to/lora.md)";
  cmd->add_option("--lora-r", o.r,
                  "train LoRA adapters of rank R on a frozen base instead of every weight (every "
                  "task but reranker); -o then writes the adapter file (the adapters and the "
                  "head), not a model")
      ->check(at_least(1))
      ->group(group);
  o.lora_only.push_back(
      cmd->add_option("--lora-alpha", o.alpha, "LoRA alpha: the adapters' output scales by alpha / R")
          ->capture_default_str()
          ->group(group));
  o.lora_only.push_back(
      cmd->add_option("--lora-target", o.targets,
                      "comma-separated Linears to adapt, matched as PEFT's target_modules: a "
                      "name matches every Linear whose name is it or ends with \".NAME\" (query, "
                      "key, value; dense = attention output, intermediate, output and pooler; "
                      "intermediate.dense, output.dense, pooler.dense)")
          ->capture_default_str()
          ->group(group));
  o.lora_only.push_back(
      cmd->add_option("--lora-dropout", o.dropout,
                      "dropout on the adapters' input while training (PEFT's lora_dropout)")
          ->capture_default_str()
          ->group(group));
}

void check_lora_options(const LoraOptions& o) {
  if (!o.enabled()) {
    for (const CLI::Option* opt : o.lora_only)
      if (opt->count()) fail_usage("{} applies with --lora-r", opt->get_name());
    return;
  }
  check_positive("--lora-alpha", o.alpha);
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f))
    fail_usage("--lora-dropout must be in [0, 1), got {}", o.dropout);
  for (const std::string& t : o.config().target_modules)
    if (t.empty())
      fail_usage("--lora-target '{}': an empty name (expected names like query,value)", o.targets);
  if (o.config().target_modules.empty())
    fail_usage("--lora-target: no names (expected names like query,value)");
}

std::string lora_summary(const BertModel& model, const LoraOptions& o) {
  size_t trainable = 0, adapters = 0;
  for (const ParamInfo& p : model.layout().params())
    if (!model.is_base_param(p.name))
      trainable += p.numel, adapters += p.name.find(".lora_") != std::string::npos;
  return fmt::format("LoRA r {} alpha {}: {} adapted Linears{}; {} trainable parameters of {} "
                     "({:.2f}%)",
                     o.r, o.alpha, adapters / 2,
                     model.quant_mode() == QuantMode::kInt8 ? " over the int8 base" : "",
                     trainable, model.num_params(),
                     100.0 * double(trainable) / double(model.num_params()));
}

void add_adapter_flag(CLI::App* cmd, std::string& adapter) {
  cmd->add_option("--adapter", adapter,
                  "LoRA adapter to run over --model, its base: a file written by `finetune "
                  "--lora-r`, or a Hugging Face PEFT folder (adapter_config.json + "
                  "adapter_model.safetensors); the adapter's head and task replace the model's");
}

void apply_adapter_flag(LoadedModel& m, const std::string& model_path, const std::string& adapter) {
  if (adapter.empty()) return;
  if (!is_peft_folder(adapter)) check_input_file("--adapter", adapter);
  apply_adapter(m, model_path, adapter);
}

}  // namespace bertrt::cli
