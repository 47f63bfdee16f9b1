#include "qat_flags.h"

#include <fmt/format.h>

#include <filesystem>

#include "common.h"
#include "core/error.h"
#include "io/model_io.h"
#include "train/finetune_setup.h"

namespace bertrt::cli {

QatConfig QatOptions::config() const {
  QatConfig c;
  c.observer_momentum = observer_momentum;
  c.freeze_observers_steps = freeze_observers_steps;
  c.int8_embeddings = embeddings == "int8";
  return c;
}

void add_qat_flags(CLI::App* c, QatOptions& o) {
  c->add_option("--qat", o.qat,
                "quantization-aware training: int8 = fake-quant every Linear's input (uint8, "
                "per tensor) and weight (int8, per output channel); -o then gets the int8 model")
      ->check(CLI::IsMember({"none", "int8"}))
      ->capture_default_str();
  o.qat_only = {
      c->add_option("--qat-observer-momentum", o.observer_momentum,
                    "with --qat: moving-average constant of the activation range observers")
          ->capture_default_str(),
      c->add_option("--qat-freeze-observers-steps", o.freeze_observers_steps,
                    "with --qat: freeze the activation ranges after this many steps (0 = never)")
          ->capture_default_str(),
      c->add_option("--qat-embeddings", o.embeddings,
                    "with --qat: embedding tables int8 (per row, fake-quant in training, int8 in "
                    "the file) or float")
          ->check(CLI::IsMember({"int8", "float"}))
          ->capture_default_str(),
      c->add_option("--save-fake-quant", o.save_fake_quant,
                    "with --qat: also write the fake-quant model (fp32 weights + ranges) here")};
}

void check_qat_options(const QatOptions& o) {
  if (!o.enabled()) {
    // Given without --qat they would change nothing: a forgotten --qat, not a choice.
    for (const CLI::Option* opt : o.qat_only)
      if (opt->count() > 0) fail_usage("{} needs --qat int8", opt->get_name());
    return;
  }
  if (!(o.observer_momentum > 0.0f && o.observer_momentum <= 1.0f))
    fail_usage("--qat-observer-momentum must be in (0, 1], got {}", o.observer_momentum);
  if (o.freeze_observers_steps < 0)
    fail_usage("--qat-freeze-observers-steps must be ≥ 0 (0 = never), got {}",
               o.freeze_observers_steps);
  if (!o.save_fake_quant.empty()) check_output_path("--save-fake-quant", o.save_fake_quant);
}

void apply_qat(BertModel& model, const QatOptions& o, const std::string& model_path) {
  std::string note;
  prepare_finetune_quant(model, o.enabled(), o.config(), model_path, &note);
  if (!note.empty()) fmt::print(stderr, "bertrt: note: {}\n", note);
}

void save_finetuned(const std::string& out, BertModel& model, const Tokenizer& tokenizer,
                    std::map<std::string, std::string> metadata, const QatOptions& o) {
  save_finetuned_model(out, model, tokenizer, std::move(metadata), o.enabled(), o.save_fake_quant);
  if (!o.enabled()) return;
  if (!o.save_fake_quant.empty())
    fmt::print("wrote {} (fake-quant: fp32 weights + activation ranges)\n", o.save_fake_quant);
  fmt::print("int8 model: {:.2f} MB\n", std::filesystem::file_size(out) / 1e6);
}

}  // namespace bertrt::cli
