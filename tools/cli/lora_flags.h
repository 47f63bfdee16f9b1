// The LoRA flags of `bertrt finetune` (--lora-r R --lora-alpha A --lora-target query,value
// [--lora-dropout P]) and --adapter FILE of the inference commands (docs/how-to/lora.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "io/model_io.h"
#include "model/lora.h"

namespace bertrt::cli {

struct LoraOptions {
  int r = 0;  // 0: no adapters (full fine-tuning)
  float alpha = 8.0f;  // PEFT's default lora_alpha
  float dropout = 0.0f;
  std::string targets = "query,value";  // PEFT's default target_modules for BERT
  std::vector<CLI::Option*> lora_only;  // the flags but --lora-r: refused without it
  bool enabled() const { return r > 0; }
  LoraConfig config() const;
  // "--lora-r R --lora-target T": the prefix of errors about the adapters' shape.
  std::string where() const;
};

void add_lora_flags(CLI::App* cmd, LoraOptions& o);
// Usage errors (exit 2) for values that can never work, before anything is loaded.
void check_lora_options(const LoraOptions& o);

// "LoRA r R alpha A: N adapted Linears; T trainable parameters of P (x%)" for a model that
// carries adapters (attach_lora): what finetune --lora-r prints before training.
std::string lora_summary(const BertModel& model, const LoraOptions& o);

// --adapter FILE on an inference command.
void add_adapter_flag(CLI::App* cmd, std::string& adapter);
// With --adapter given: its file checked, read and attached to m (io/adapter_io.h apply_adapter).
void apply_adapter_flag(LoadedModel& m, const std::string& model_path, const std::string& adapter);

}  // namespace bertrt::cli
