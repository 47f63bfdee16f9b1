// Parameters as named tensors carved out of ONE contiguous fp32 buffer (llm.c style): the same
// layout serves the weights, their gradients and the optimizer moments, so an optimizer step or a
// global grad-norm is one loop over a flat array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/config.h"
#include "model/lora.h"

namespace bertrt {

struct ParamInfo {
  std::string name;            // Hugging Face state-dict name, e.g. bert.encoder.layer.0.output.dense.weight
  std::vector<int64_t> shape;  // nn.Linear weights are [out_features, in_features]
  size_t offset = 0;           // in floats, into the flat buffer (64-byte aligned)
  size_t numel = 0;
  bool decay = true;           // false for LayerNorm weights and all biases (BERT recipe)
};

class ParamLayout {
 public:
  ParamLayout() = default;
  explicit ParamLayout(std::vector<ParamInfo> params);  // fills offset/numel
  const std::vector<ParamInfo>& params() const { return params_; }
  size_t total() const { return total_; }  // floats
  // nullptr when absent.
  const ParamInfo* find(const std::string& name) const;
  const ParamInfo& at(const std::string& name) const;  // throws bertrt::Error when absent

 private:
  std::vector<ParamInfo> params_;
  std::unordered_map<std::string, size_t> index_;
  size_t total_ = 0;
};

// Every parameter of BERT + the heads in `heads`, in Hugging Face order and names:
// bert.embeddings.*, bert.encoder.layer.N.*, bert.pooler.dense.*, cls.predictions.* (transform +
// bias; the decoder weight is tied to bert.embeddings.word_embeddings.weight and not stored),
// cls.seq_relationship.*, classifier.*; with `lora`, every selected Linear's adapter last
// (<module>.lora_A.weight [r, in], <module>.lora_B.weight [out, r], PEFT's names without its
// "base_model.model." prefix), so that the frozen base and head come first (UpdateRule's frozen
// prefix).
ParamLayout bert_param_layout(const BertConfig& config, const HeadsConfig& heads,
                              const LoraConfig* lora = nullptr);

}  // namespace bertrt
