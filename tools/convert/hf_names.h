// Hugging Face state-dict names as real checkpoints spell them → the canonical names bertrt
// stores (transformers modeling_bert.py, BertForPreTraining layout), and which heads they carry.
//
// Quirks handled (each seen in released files):
// - BertModel saved bare: "embeddings.*", "encoder.*", "pooler.*" get the "bert." prefix.
// - Old TF-converted files: "LayerNorm.gamma"/"LayerNorm.beta" → "LayerNorm.weight"/".bias" (only
//   those: a "gamma" anywhere else is not a LayerNorm and is left alone).
// - Buffers, not weights: "bert.embeddings.position_ids" (saved by transformers < 4.31) and
//   "bert.embeddings.token_type_ids" are dropped.
// - "cls.predictions.decoder.weight": the output layer, tied to the word embeddings; dropped after
//   the converter has checked it EQUALS them (bertrt always ties; an untied decoder is refused).
// - "cls.predictions.decoder.bias": the same Parameter as "cls.predictions.bias" (tied in
//   BertLMPredictionHead); renamed to it when alone, checked equal and dropped when both are saved.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "convert/checkpoint.h"
#include "convert/hf_config.h"
#include "model/config.h"

namespace bertrt::convert {

struct HfNameMap {
  struct Entry {
    std::string name;  // canonical name
    size_t source;     // index into the reader's tensors()
  };
  struct Duplicate {
    size_t source;         // a tensor dropped because it must equal ...
    std::string equal_to;  // ... this canonical tensor (checked by the converter)
  };
  std::vector<Entry> tensors;
  std::vector<Duplicate> duplicates;
  std::vector<std::string> dropped;  // source names of dropped buffers and duplicates

  const Entry* find(const std::string& name) const;
};

// Throws bertrt::Error (naming `where`) when two source names map to the same canonical name.
HfNameMap map_hf_names(const std::vector<CheckpointTensor>& tensors, const std::string& where);

// The heads of a checkpoint: those config.json's architecture has (or, when the config has none,
// those whose tensors are present) AND whose tensors are present. A head the architecture has but
// the weights lack (a BertForPreTraining file without cls.seq_relationship.*, which transformers
// loads with a warning and a random head) is left out, with a warning naming it. Tensors of a
// head the architecture does not have stay unknown (an error unless --drop-unknown).
// BertForSequenceClassification with one label or problem_type "regression" is regression
// (transformers' rule); its labels are the id2label names.
struct HfHeads {
  HeadsConfig heads;
  std::string architecture;  // as given, or inferred ("BertModel" when no head tensor is present)
  bool inferred = false;
  std::vector<std::string> missing;   // heads left out: "nsp", "mlm", "classifier", "qa_outputs"
  std::vector<std::string> warnings;  // one per missing head, naming it and its tensors
};

// Throws bertrt::Error naming `config_path` for an architecture bertrt does not run or heads that
// do not validate (e.g. token classification with one label).
HfHeads hf_heads(const HfConfig& config, const std::set<std::string>& canonical_names,
                 const std::string& config_path);

// The Hugging Face class name for `heads`: the inverse of hf_heads, used by the export.
std::string hf_architecture(const HeadsConfig& heads);

}  // namespace bertrt::convert
