// BERT hyper-parameters with Hugging Face config.json names (BertConfig).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "heads/embedding_config.h"

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
  float hidden_dropout_prob = 0.1f;           // recorded for export; training drops only when
                                              // asked (finetune --hidden-dropout-prob ...)
  float attention_probs_dropout_prob = 0.1f;  // (docs/explanation/numerics.md, "Dropout")

  int head_dim() const { return hidden_size / num_attention_heads; }
  Gelu gelu() const;
  // Throws bertrt::Error naming the first inconsistent field (e.g. hidden_size % heads != 0).
  void validate() const;
};

// The fine-tuning head on top of the encoder (paper §4, Figure 4), with Hugging Face's classes:
//   kSequenceClassification  BertForSequenceClassification: classifier.* [num_labels, H] on the
//                            pooled [CLS]; single sentences and pairs alike (the pair is in the ids)
//   kRegression              the same class with num_labels = 1, problem_type "regression":
//                            classifier.* [1, H], MSE loss (STS-B)
//   kTokenClassification     BertForTokenClassification: classifier.* [num_labels, H] on every
//                            token of last_hidden_state (NER)
//   kQuestionAnswering       BertForQuestionAnswering: qa_outputs.* [2, H] → start/end logits
enum class HeadKind { kNone, kSequenceClassification, kRegression, kTokenClassification,
                      kQuestionAnswering };
// "none", "sequence_classification", "regression", "token_classification", "question_answering".
const char* head_kind_name(HeadKind kind);
// Inverse of head_kind_name; throws bertrt::Error listing the valid names.
HeadKind parse_head_kind(const std::string& name);

// Which heads a model carries (DESIGN.md "heads").
struct HeadsConfig {
  bool mlm = false;  // cls.predictions.* (decoder tied to word embeddings)
  bool nsp = false;  // cls.seq_relationship.*
  // The fine-tuning head. kNone with non-empty labels means kSequenceClassification (code and
  // files written before the kind existed); resolved_kind() applies that rule.
  HeadKind kind = HeadKind::kNone;
  // Class names, id = index: sequence and token classification (≥ 2). Regression: empty or one
  // name for the output. Question answering and none: empty.
  std::vector<std::string> labels;
  std::string task;  // fine-tuning task name (e.g. "sst2"), empty if none
  // A sentence-transformers model's Pooling → Dense → Normalize (heads/embedding_config.h); its
  // Dense weights are parameters like any head's. Checked against the config by BertModel.
  std::optional<EmbeddingConfig> embedding;

  HeadKind resolved_kind() const {
    return kind == HeadKind::kNone && !labels.empty() ? HeadKind::kSequenceClassification : kind;
  }
  // Outputs per row of the fine-tuning head: labels.size() for classification, 1 for regression,
  // 2 for question answering (start, end), 0 for none.
  int num_labels() const;
  // True when the model carries classifier.* (sequence/token classification, regression).
  bool classifier() const;
  // Throws bertrt::Error naming the inconsistency (e.g. token classification without labels).
  void validate() const;
};

// Turc et al. 2019 presets: tiny L2 H128, mini L4 H256, small L4 H512, medium L8 H512,
// base L12 H768, large L24 H1024; heads = H/64, intermediate = 4H, 512 positions.
BertConfig preset_config(const std::string& preset, int vocab_size);

}  // namespace bertrt
