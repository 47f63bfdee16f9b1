// bertrt merge: a LoRA adapter folded into its base, W' = W + (alpha / r) · B·A for every adapted
// Linear (PEFT's merge_and_unload), written as a plain fp32 model with the adapter's head and task:
// it runs the fused inference path and goes through `bertrt quantize` like any fine-tuned model.
#include <fmt/format.h>

#include "common.h"
#include "core/error.h"
#include "io/adapter_io.h"
#include "io/model_io.h"
#include "io/peft_adapter.h"
#include "lora_flags.h"

namespace bertrt::cli {

void add_merge(CLI::App& app) {
  struct Opts {
    std::string model, adapter, out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* c = app.add_subcommand(
      "merge", "fold a LoRA adapter into its base: a plain fp32 model with the adapter's task");
  c->footer(
      "Example:\n"
      "  bertrt merge --model base.brt --adapter sst2-lora.brt -o sst2.brt\n"
      "The adapter is refused on any base but the one it was trained on (its checksum).");
  c->add_option("--model", o->model, "the base model (.brt) the adapter was trained on")
      ->required();
  c->add_option("--adapter", o->adapter,
                "LoRA adapter file (written by `finetune --lora-r`), or a Hugging Face PEFT "
                "folder (checked against the base by shape)")
      ->required();
  c->add_option("-o,--output", o->out, "merged fp32 model (.brt), written atomically")->required();
  c->callback([o] {
    check_output_path("-o", o->out);
    check_input_file("--model", o->model);
    if (!is_peft_folder(o->adapter)) check_input_file("--adapter", o->adapter);
    check_distinct_files({{"-o", o->out}}, {{"--model", o->model}, {"--adapter", o->adapter}});
    LoadedModel m = load_model(o->model);
    // Copied into the model's own arena (the merge writes W + s·B·A), not run in place.
    copy_adapter(m, *load_adapter(o->adapter, *m.model, adapter_base_checksum(*m.model), o->model));
    m.model->merge_lora();
    auto meta = m.metadata;
    meta.erase("adapter");
    meta["source"] = "bertrt merge";
    meta["merged_adapter"] = o->adapter;
    save_model(o->out, *m.model, *m.tokenizer, meta);
    fmt::print("wrote {}\n", o->out);
  });
}

}  // namespace bertrt::cli
