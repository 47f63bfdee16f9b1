// `bertrt-convert --to peft`: a bertrt LoRA adapter (.brt, io/adapter_io.h) → a Hugging Face PEFT
// folder that PeftModel.from_pretrained(base, DIR) loads over the base `--to hf` exports:
// adapter_config.json (io/peft_adapter.h peft_adapter_config_json) and adapter_model.safetensors
// with the names get_peft_model_state_dict writes (base_model.model.<module>.lora_A.weight, the
// head as base_model.model.classifier.weight). A PEFT folder whose weights are
// adapter_model.bin (a torch pickle, which the library does not read) is rewritten the same way,
// its adapter_config.json copied unchanged.
// Both files are written and synced to temp files before either is renamed into place; a folder
// this export created is removed again when it fails.
#pragma once

#include <string>
#include <vector>

namespace bertrt::convert {

// Throws bertrt::Error naming the file: not an adapter, an unwritable folder. Returns warnings.
std::vector<std::string> export_peft(const std::string& input, const std::string& dir);

}  // namespace bertrt::convert
