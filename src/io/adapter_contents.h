// What an adapter says before it meets a base: filled by a reader (io/adapter_io.h for bertrt's
// adapter files, io/peft_adapter.h for Hugging Face PEFT folders) and checked against the base by
// make_adapter (io/adapter_io.h), the one place where adapters meet a base.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/model_file.h"
#include "model/config.h"
#include "model/lora.h"

namespace bertrt {

struct AdapterContents {
  LoraConfig lora;
  // The base's checksum (base_model_checksum) where the source records one, as bertrt's adapter
  // files do; a PEFT folder records none and is checked against the base by shape.
  std::optional<uint32_t> base_checksum;
  // The base it was trained on (adapter_base_dtype): "float32" (a PEFT folder too) or "int8".
  std::string base_dtype = "float32";
  BertConfig config;  // the base's config as the adapter recorded it (a PEFT folder: the base's)
  HeadsConfig heads;  // the task head (PEFT's modules_to_save)
  // bertrt's tensor names (bert.encoder.layer.0.attention.self.query.lora_A.weight,
  // classifier.weight): views into the opened file, alive while the caller keeps it, or into
  // `storage`.
  std::vector<TensorRecord> tensors;
  std::map<std::string, std::string> metadata;  // the task record (task, finetune_task, …)
  std::deque<std::vector<float>> storage;
};

}  // namespace bertrt
