#include "model/config.h"

#include <cmath>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "core/utf8.h"

namespace bertrt {

Gelu BertConfig::gelu() const {
  if (hidden_act == "gelu") return Gelu::kErf;
  if (hidden_act == "gelu_new" || hidden_act == "gelu_tanh" || hidden_act == "gelu_pytorch_tanh")
    return Gelu::kTanh;
  fail("config: hidden_act '{}' is not supported (expected gelu, gelu_new or gelu_pytorch_tanh)",
       hidden_act);
}

void BertConfig::validate() const {
  auto positive = [](const char* field, int v) {
    if (v <= 0) fail("config: {} must be positive, got {}", field, v);
  };
  positive("vocab_size", vocab_size);
  positive("hidden_size", hidden_size);
  positive("num_hidden_layers", num_hidden_layers);
  positive("num_attention_heads", num_attention_heads);
  positive("intermediate_size", intermediate_size);
  positive("max_position_embeddings", max_position_embeddings);
  positive("type_vocab_size", type_vocab_size);
  if (hidden_size % num_attention_heads != 0)
    fail("config: hidden_size {} is not a multiple of num_attention_heads {}", hidden_size,
         num_attention_heads);
  if (pad_token_id < 0 || pad_token_id >= vocab_size)
    fail("config: pad_token_id {} outside [0, vocab_size {})", pad_token_id, vocab_size);
  // Float fields in the ranges a trained BERT has (released models: layer_norm_eps 1e-12 to 1e-5,
  // dropout 0 to 0.1, initializer_range 0.02): a layer_norm_eps of 1e30 or inf makes every
  // LayerNorm output its bias, every answer the same.
  if (!(layer_norm_eps > 0.0f && layer_norm_eps <= 0.1f))
    fail("config: layer_norm_eps {} is outside (0, 0.1]", layer_norm_eps);
  if (!(initializer_range >= 0.0f && initializer_range <= 1.0f))
    fail("config: initializer_range {} is outside [0, 1]", initializer_range);
  if (!(hidden_dropout_prob >= 0.0f && hidden_dropout_prob < 1.0f))
    fail("config: hidden_dropout_prob {} is outside [0, 1)", hidden_dropout_prob);
  if (!(attention_probs_dropout_prob >= 0.0f && attention_probs_dropout_prob < 1.0f))
    fail("config: attention_probs_dropout_prob {} is outside [0, 1)", attention_probs_dropout_prob);
  (void)gelu();
}

namespace {
constexpr std::pair<HeadKind, const char*> kHeadKindNames[] = {
    {HeadKind::kNone, "none"},
    {HeadKind::kSequenceClassification, "sequence_classification"},
    {HeadKind::kRegression, "regression"},
    {HeadKind::kTokenClassification, "token_classification"},
    {HeadKind::kQuestionAnswering, "question_answering"}};
}  // namespace

const char* head_kind_name(HeadKind kind) {
  for (const auto& [k, name] : kHeadKindNames)
    if (k == kind) return name;
  return "?";
}

HeadKind parse_head_kind(const std::string& name) {
  for (const auto& [k, n] : kHeadKindNames)
    if (name == n) return k;
  fail("head kind '{}' is not one of none, sequence_classification, regression, "
       "token_classification, question_answering", name);
}

int HeadsConfig::num_labels() const {
  switch (resolved_kind()) {
    case HeadKind::kSequenceClassification:
    case HeadKind::kTokenClassification: return static_cast<int>(labels.size());
    case HeadKind::kRegression: return 1;
    case HeadKind::kQuestionAnswering: return 2;
    case HeadKind::kNone: break;
  }
  return 0;
}

bool HeadsConfig::classifier() const {
  const HeadKind k = resolved_kind();
  return k == HeadKind::kSequenceClassification || k == HeadKind::kRegression ||
         k == HeadKind::kTokenClassification;
}

void HeadsConfig::validate() const {
  const HeadKind k = resolved_kind();
  const char* name = head_kind_name(k);
  switch (k) {
    case HeadKind::kSequenceClassification:
    case HeadKind::kTokenClassification:
      // One class would make the softmax constant (zero loss, zero gradient); HF reads
      // num_labels = 1 as regression.
      if (labels.size() < 2)
        fail("heads: {} needs at least 2 labels, got {} (one output is regression)", name,
             labels.size());
      break;
    case HeadKind::kRegression:
      if (labels.size() > 1)
        fail("heads: regression has one output, got {} labels", labels.size());
      break;
    case HeadKind::kQuestionAnswering:
    case HeadKind::kNone:
      if (!labels.empty()) fail("heads: {} takes no labels, got {}", name, labels.size());
      break;
  }
  check_label_text(task, "heads: task");
  std::unordered_set<std::string_view> seen;  // hashed: a file may hold 100,000 labels
  seen.reserve(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) {
    check_label_text(labels[i], fmt::format("heads: label {}", i));
    if (!seen.insert(labels[i]).second) fail("heads: label '{}' appears twice", labels[i]);
  }
}

BertConfig preset_config(const std::string& preset, int vocab_size) {
  struct P { const char* name; int layers, hidden; };
  static const P presets[] = {{"tiny", 2, 128},  {"mini", 4, 256}, {"small", 4, 512},
                              {"medium", 8, 512}, {"base", 12, 768}, {"large", 24, 1024}};
  for (const P& p : presets) {
    if (preset != p.name) continue;
    BertConfig c;
    c.vocab_size = vocab_size;
    c.hidden_size = p.hidden;
    c.num_hidden_layers = p.layers;
    c.num_attention_heads = p.hidden / 64;
    c.intermediate_size = 4 * p.hidden;
    c.max_position_embeddings = 512;
    return c;
  }
  fail("--preset '{}' is not one of tiny, mini, small, medium, base, large", preset);
}

}  // namespace bertrt
