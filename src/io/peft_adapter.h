// Hugging Face PEFT LoRA folders (peft 0.11's PeftModel.save_pretrained layout), read as bertrt
// adapters and written from them:
//   adapter_config.json          peft_type "LORA", task_type, r, lora_alpha, lora_dropout,
//                                target_modules (a list, or a regex string matched in full),
//                                bias "none", modules_to_save, fan_in_fan_out, use_dora, use_rslora
//   adapter_model.safetensors    base_model.model.<module>.lora_A.weight [r, in],
//                                base_model.model.<module>.lora_B.weight [out, r], and the head
//                                (modules_to_save) as get_peft_model_state_dict names it:
//                                base_model.model.classifier.weight (or qa_outputs.*)
// A PEFT folder names its base only by name (base_model_name_or_path), with no checksum: it is
// checked against the base by shape, not by weights. docs/how-to/lora.md has the workflow.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "io/adapter_contents.h"
#include "io/model_file.h"
#include "model/config.h"
#include "model/lora.h"

namespace bertrt {

// The names PEFT saves under: "base_model.model." + the Hugging Face module path.
constexpr const char* kPeftPrefix = "base_model.model.";

// True when `path` is a folder (a PEFT adapter, or meant as one); a file is a bertrt adapter.
bool is_peft_folder(const std::string& path);

// Reads the PEFT folder `dir` as an adapter for a base of `base`'s shape. Every check runs before
// anything is returned, and each error names the file and the key or tensor: a folder without
// adapter_config.json; a peft_type other than LORA; bias other than "none"; use_dora, use_rslora
// or fan_in_fan_out true; layers_to_transform, rank_pattern, alpha_pattern or layer_replication
// set; r, lora_alpha or lora_dropout invalid or r wider than a layer; a target that matches no
// Linear; a task_type without a head bertrt runs (SEQ_CLS, TOKEN_CLS, QUESTION_ANS);
// modules_to_save other than the head; no adapter_model.safetensors; a tensor missing, unknown,
// misshaped or not a float. The head's labels are Hugging Face's defaults (LABEL_0, ...): name
// the task with --task, as for a converted checkpoint.
AdapterContents read_peft_adapter(const std::string& dir, const BertConfig& base);

// PEFT's adapter_config.json for a bertrt adapter record (adapter_io.h) and head kind: the keys
// peft 0.11's LoraConfig has (later releases read them too), without bertrt's own
// (base_model_checksum), which PeftConfig.from_pretrained of those releases refuses.
std::string peft_adapter_config_json(const LoraConfig& lora, HeadKind head,
                                     const std::string& base_model_name_or_path);

}  // namespace bertrt
