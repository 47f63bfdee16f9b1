// BERT hyper-parameters with Hugging Face config.json names (BertConfig).
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"

namespace bertrt {

struct BertConfig {
  int vocab_size = 30522;
  int hidden_size = 768;
  int num_hidden_layers = 12;
  int num_attention_heads = 12;
  int intermediate_size = 3072;
  std::string hidden_act = "gelu";  // "gelu" (exact erf, HF) or "gelu_new"/"gelu_tanh" (TF BERT)
  int max_position_embeddings = 512;
  int type_vocab_size = 2;
  float layer_norm_eps = 1e-12f;
  int pad_token_id = 0;
  float initializer_range = 0.02f;
  float hidden_dropout_prob = 0.1f;           // recorded for export; training runs without dropout
  float attention_probs_dropout_prob = 0.1f;  // (see README, "Numerics")

  int head_dim() const { return hidden_size / num_attention_heads; }
  Gelu gelu() const;
  // Throws bertrt::Error naming the first inconsistent field (e.g. hidden_size % heads != 0).
  void validate() const;
};

// Which task heads a model carries (DESIGN.md "heads").
struct HeadsConfig {
  bool mlm = false;                 // cls.predictions.* (decoder tied to word embeddings)
  bool nsp = false;                 // cls.seq_relationship.*
  std::vector<std::string> labels;  // sequence classification: classifier.* when non-empty
  std::string task;                 // fine-tuning task name (e.g. "sst2"), empty if none
  int num_labels() const { return static_cast<int>(labels.size()); }
  bool classifier() const { return !labels.empty(); }
};

// Turc et al. 2019 presets: tiny L2 H128, mini L4 H256, small L4 H512, medium L8 H512,
// base L12 H768, large L24 H1024; heads = H/64, intermediate = 4H, 512 positions.
BertConfig preset_config(const std::string& preset, int vocab_size);

}  // namespace bertrt
