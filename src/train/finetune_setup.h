// What `bertrt finetune` and the C API's trainer (capi/) decide the same way around the loop of
// train/finetune.h: the step count and optimizer options from the hyper-parameters, the model's
// quantization mode before training (QAT on/off) and the file written after it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model/bert_model.h"
#include "tasks/task_definition.h"
#include "tokenizer/tokenizer.h"
#include "train/update_rule.h"

namespace bertrt {

// The CLI's fine-tuning hyper-parameters (bertrt finetune --help), with its defaults.
struct FinetuneHyper {
  int epochs = 3;
  int64_t max_steps = 0;  // > 0: instead of epochs
  int batch_size = 32;
  float learning_rate = 2e-5f, warmup_ratio = 0.1f, weight_decay = 0.01f;
  uint64_t seed = 42;
  bool group_by_length = false;
};

// ceil(train_rows / batch_size) per epoch; max_steps when > 0, else epochs of them.
int64_t finetune_steps_per_epoch(const FinetuneHyper& h, size_t train_rows);
int64_t finetune_total_steps(const FinetuneHyper& h, size_t train_rows);
// AdamW at learning_rate, weight_decay, warm-up ceil(total · warmup_ratio), linear decay.
OptimOptions finetune_optim_options(const FinetuneHyper& h, int64_t total_steps);

// The converter's "architecture" names the source checkpoint's class, which a fine-tuning head
// replaces (info showed BertForMaskedLM for an SST-2 model): renamed "source_architecture",
// beside source_path and source_format.
void rename_source_architecture(std::map<std::string, std::string>& meta);

// The metadata of a fine-tuned model: the input model's, with source, finetune_task,
// finetune_steps and the task definition (what eval/predict read), the converter's
// "architecture" renamed "source_architecture", and without the resumable-run
// record `run_key` of an interrupted CLI run (a finished model equals an uninterrupted run's).
std::map<std::string, std::string> finetuned_metadata(std::map<std::string, std::string> base,
                                                      const TaskDefinition& task,
                                                      int64_t total_steps,
                                                      const std::string& source,
                                                      const std::string& run_key = "finetune_run");

// Before training (after set_heads): qat switches the model to fake-quant training with `config`;
// without qat a fake-quant input model is trained in fp32 and `note` (if given) says so. An int8
// model is refused (throws bertrt::Error naming `model_path`).
void prepare_finetune_quant(BertModel& model, bool qat, const QatConfig& config,
                            const std::string& model_path, std::string* note = nullptr);
// Writes the fine-tuned model atomically: fp32 without qat; with qat the int8 deployable model
// (observers frozen, converted in memory: the model is int8 afterwards), and first the fake-quant
// model to `fake_quant_path` when not empty.
void save_finetuned_model(const std::string& path, BertModel& model, const Tokenizer& tokenizer,
                          std::map<std::string, std::string> metadata, bool qat,
                          const std::string& fake_quant_path = "");

}  // namespace bertrt
