// A LoRA adapter loaded for inference over a shared base (docs/explanation/lora.md, "Several
// adapters over one base"): its own tensors only — the task head (PEFT's modules_to_save) and
// every adapted Linear's lora_A / lora_B — in one 64-byte aligned buffer, never the base's. A
// BertModel runs it with BertModel::set_adapter: the base's weights are read where they lie (the
// model file's mapping), the adapter's from here. Immutable once built (shared through
// std::shared_ptr<const LoraAdapter>), so any number of models over the same base may run one
// adapter at once, each on its own thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/host_floats.h"
#include "model/config.h"
#include "model/lora.h"
#include "model/params.h"

namespace bertrt {

class LoraAdapter {
 public:
  // An adapter of `lora` with the head `heads` for a base of `config`: the layout of its tensors
  // (adapter_layout), zero-filled. Throws bertrt::Error (prefixed by `where`) for a bad LoRA
  // config on this base (lora_sites) or a head that is neither a task head nor a
  // sentence-embedding head without Dense modules (pooling and normalization only: no tensors).
  LoraAdapter(const BertConfig& config, HeadsConfig heads, LoraConfig lora,
              const std::string& where);

  const BertConfig& config() const { return config_; }  // the base's
  const LoraConfig& lora() const { return lora_; }
  const HeadsConfig& heads() const { return heads_; }  // kind resolved
  const ParamLayout& layout() const { return layout_; }
  const float* weights() const { return weights_.data(); }
  float* weights() { return weights_.data(); }  // while building (adapter_io.cpp)
  size_t bytes() const { return weights_.size() * sizeof(float); }

  // The base it was trained on: CRC-32C of the base's bert.* tensors (io/adapter_io.h
  // adapter_base_checksum); a model refuses the adapter when its own differs.
  uint32_t base_checksum = 0;
  std::string source;                           // the file, for messages
  std::map<std::string, std::string> metadata;  // the file's task record (task, finetune_task…)

 private:
  BertConfig config_;
  HeadsConfig heads_;
  LoraConfig lora_;
  ParamLayout layout_;
  HostFloats weights_;
};

// The tensors an adapter holds, in the order of bert_param_layout(config, heads, &lora) (the
// head's, then the adapters'), offsets into the adapter's own buffer.
ParamLayout adapter_layout(const BertConfig& config, const HeadsConfig& heads,
                           const LoraConfig& lora);

// True for the tensors an adapter holds instead of the base: <module>.lora_A/B.weight and the
// task head's (classifier.*, qa_outputs.*).
bool adapter_tensor(const std::string& name);

}  // namespace bertrt
