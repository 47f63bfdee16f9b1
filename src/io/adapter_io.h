// LoRA adapter files: a .brt file (io/model_file.h, the same verified container and checksums)
// that holds only the adapters' tensors (<module>.lora_A.weight, <module>.lora_B.weight) and the
// task head's (PEFT's modules_to_save: classifier.* or qa_outputs.*), with the base's config and
// tokenizer, and in its metadata an `adapter_config` record that follows PEFT's
// adapter_config.json (peft_type "LORA", r, lora_alpha, lora_dropout, target_modules, bias "none",
// modules_to_save, task_type) plus the base's checksum (base_model_checksum), so that an adapter
// is refused on any other base. docs/explanation/lora.md has the design.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "io/model_io.h"
#include "model/lora.h"

namespace bertrt {

// The metadata key of the adapter record; a file with it is an adapter, not a model.
constexpr const char* kAdapterConfigKey = "adapter_config";

// CRC-32C over the name, shape and fp32 values of every base tensor an adapter sits on (the
// bert.* tensors: embeddings, encoder, pooler), in layout order: the same for a base file and a
// fine-tuned copy of it whose head changed, different for any other weights. Throws
// bertrt::Error for an int8 model (no fp32 weights to fingerprint).
uint32_t adapter_base_checksum(const BertModel& model);
std::string checksum_text(uint32_t crc);  // "crc32c:0123abcd"

// Writes the adapters and head of `model` (which carries adapters) atomically; `base_checksum`
// is the base's, taken before training (training changes only the adapters and the head, so it
// could be taken after too). metadata: the task record and provenance (the model's own).
void save_adapter(const std::string& path, const BertModel& model, const Tokenizer& tokenizer,
                  uint32_t base_checksum, std::map<std::string, std::string> metadata,
                  const std::string& base_name = "");

// The adapter record `j` of `path` (its kAdapterConfigKey metadata), checked against what bertrt
// implements; *base_checksum receives its base_model_checksum.
LoraConfig read_lora_config(const std::string& path, const nlohmann::json& j,
                            uint32_t* base_checksum);

// Opens an adapter file (or a Hugging Face PEFT folder: io/peft_adapter.h, checked by shape, as
// it carries no checksum of its base) and attaches it to m's model (the base loaded from `model_path`): the
// adapter's head replaces the base's, its adapters are attached and their tensors copied. m's
// metadata takes the adapter's task record (`task`, `finetune_task`), so eval and predict read
// the adapter's task. Throws bertrt::Error, naming the files and what was expected, before
// changing the model when: the file is not an adapter (a model), its record is not LoRA as bertrt
// implements it (peft_type, bias, use_dora, use_rslora, fan_in_fan_out), r/alpha/dropout/targets
// are invalid, the base's config or checksum differ from the adapter's, or a tensor is missing,
// unknown or misshaped.
void apply_adapter(LoadedModel& m, const std::string& model_path, const std::string& adapter_path);

}  // namespace bertrt
