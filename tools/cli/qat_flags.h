// The quantization-aware training flags of `bertrt finetune` (--qat int8 ...) and what they do
// around the fine-tuning loop: kept apart so that the fine-tuning command needs four calls only.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/bert_model.h"
#include "tokenizer/tokenizer.h"

namespace bertrt::cli {

struct QatOptions {
  std::string qat = "none";            // --qat none | int8
  float observer_momentum = 0.01f;     // --qat-observer-momentum
  int64_t freeze_observers_steps = 0;  // --qat-freeze-observers-steps (0 = never)
  std::string embeddings = "int8";     // --qat-embeddings int8 | float
  std::string save_fake_quant;         // --save-fake-quant FILE
  std::vector<CLI::Option*> qat_only;  // the flags above but --qat: refused without --qat int8
  bool enabled() const { return qat == "int8"; }
  QatConfig config() const;
};

void add_qat_flags(CLI::App* cmd, QatOptions& o);
// Validates the values and the --save-fake-quant folder; call before any long work.
void check_qat_options(const QatOptions& o);
// After the model's heads are set: --qat int8 switches it to fake-quant training. Without --qat a
// fake-quant (QAT) input model is fine-tuned in fp32 (a note says so). An int8 model is refused.
void apply_qat(BertModel& model, const QatOptions& o, const std::string& model_path);
// Writes the fine-tuned model to `out`: fp32 without --qat; with --qat int8 the int8 deployable
// model, and the fake-quant model (fp32 weights + observer ranges) to --save-fake-quant if given.
void save_finetuned(const std::string& out, BertModel& model, const Tokenizer& tokenizer,
                    std::map<std::string, std::string> metadata, const QatOptions& o);

}  // namespace bertrt::cli
