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
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "io/model_io.h"
#include "model/lora.h"
#include "io/adapter_contents.h"
#include "model/lora_adapter.h"

namespace bertrt {

// The metadata key of the adapter record; a file with it is an adapter, not a model.
constexpr const char* kAdapterConfigKey = "adapter_config";

// The metadata key (outside the PEFT record) that says which base the adapter was trained on:
// "float32" or "int8" (absent: float32).
constexpr const char* kAdapterBaseDtypeKey = "adapter_base_dtype";

// CRC-32C over the name, shape and values of every base tensor an adapter sits on (the bert.*
// tensors: embeddings, encoder, pooler), in layout order: the same for a base file and a
// fine-tuned copy of it whose head changed, different for any other weights. The values are the
// fp32 ones; of an int8 model (model/lora_int8.h), each int8 weight's integers then its per-row
// fp32 scales, and the fp32 values of the rest (LayerNorms, biases, float tables), so an adapter
// trained over an int8 model names that int8 model, not its float source. Throws bertrt::Error
// for a model that holds neither for a tensor.
uint32_t adapter_base_checksum(const BertModel& model);
std::string checksum_text(uint32_t crc);  // "crc32c:0123abcd"
const char* adapter_base_dtype(const BertModel& model);  // "int8" or "float32"

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

// Reading an adapter and attaching it: the one place where adapters meet a base. A reader (this
// file's, for bertrt's adapter files; io/peft_adapter.h, for PEFT folders) fills AdapterContents;
// make_adapter checks it against the base and builds the immutable LoraAdapter that any number of
// models over that base run.

// Reads bertrt's adapter file `path` (the `file` it opened, kept alive by the caller). Throws
// bertrt::Error naming the file and the key when it is not an adapter (a model) or its record is
// not LoRA as bertrt implements it (peft_type, bias, use_dora, use_rslora, fan_in_fan_out), or
// r/alpha/dropout/target_modules/base_model_checksum are malformed.
AdapterContents read_adapter_file(const ModelFile& file, const std::string& path);

// The adapter of `contents` (read from `path`) for `base`, whose checksum (adapter_base_checksum)
// is `base_checksum` and which was loaded from `base_path`: its tensors copied into its own
// buffer. Throws bertrt::Error, naming both files and what was expected, before anything changes,
// when the base's config or checksum differ from the adapter's, r/alpha/dropout/targets are
// invalid on it, the head is not a task head, or a tensor is missing, unknown or misshaped. An
// adapter without a checksum (a PEFT folder, checked by shape) takes `base_checksum`: it is then
// bound to this base as a bertrt adapter file is to its own.
std::shared_ptr<const LoraAdapter> make_adapter(const AdapterContents& contents,
                                                const std::string& path, const BertModel& base,
                                                uint32_t base_checksum,
                                                const std::string& base_path);

// read_adapter_file (or read_peft_adapter, for a folder) + make_adapter for the adapter at `path`;
// a file's pages are given back once copied.
std::shared_ptr<const LoraAdapter> load_adapter(const std::string& path, const BertModel& base,
                                                uint32_t base_checksum,
                                                const std::string& base_path);

// Runs `adapter` on m's model in place (BertModel::set_adapter: the base is read where it lies,
// never copied) and gives m's metadata the adapter's task record (`task`, `finetune_task`,
// `finetune_steps`), so eval and predict read the adapter's task; nullptr detaches it and brings
// back the base's record. Throws bertrt::Error as set_adapter does, and when the adapter was made
// for another base (`base_checksum`, m's, against the adapter's).
void use_adapter(LoadedModel& m, std::shared_ptr<const LoraAdapter> adapter,
                 uint32_t base_checksum);

// Opens an adapter file or PEFT folder and runs it on m's model (the base loaded from `model_path`) in place:
// load_adapter + use_adapter (the inference commands' --adapter).
void apply_adapter(LoadedModel& m, const std::string& model_path, const std::string& adapter_path);

// The adapter copied into m's model instead, as trainable parameters of its own arena
// (attach_lora, then the tensors): what `bertrt merge` folds into the base. Throws as
// BertModel::attach_lora does.
void copy_adapter(LoadedModel& m, const LoraAdapter& adapter);

}  // namespace bertrt
