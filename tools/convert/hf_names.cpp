#include "convert/hf_names.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace bertrt::convert {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::string canonical(std::string n) {
  if (ends_with(n, "LayerNorm.gamma")) n.replace(n.size() - 5, 5, "weight");
  else if (ends_with(n, "LayerNorm.beta")) n.replace(n.size() - 4, 4, "bias");
  for (const char* bare : {"embeddings.", "encoder.", "pooler."})
    if (starts_with(n, bare)) return "bert." + n;
  return n;
}

constexpr const char* kWordEmbeddings = "bert.embeddings.word_embeddings.weight";
constexpr const char* kMlmBias = "cls.predictions.bias";

}  // namespace

const HfNameMap::Entry* HfNameMap::find(const std::string& name) const {
  for (const Entry& e : tensors)
    if (e.name == name) return &e;
  return nullptr;
}

HfNameMap map_hf_names(const std::vector<CheckpointTensor>& ts, const std::string& where) {
  HfNameMap m;
  std::map<std::string, size_t> by_name;  // canonical -> source
  std::vector<std::pair<size_t, std::string>> decoder_bias;
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string n = canonical(ts[i].name);
    if (n == "bert.embeddings.position_ids" || n == "bert.embeddings.token_type_ids") {
      m.dropped.push_back(ts[i].name);
    } else if (n == "cls.predictions.decoder.weight") {
      m.duplicates.push_back({i, kWordEmbeddings});
      m.dropped.push_back(ts[i].name);
    } else if (n == "cls.predictions.decoder.bias") {
      decoder_bias.push_back({i, ts[i].name});
    } else {
      auto [it, fresh] = by_name.emplace(n, i);
      if (!fresh)
        fail("{}: tensors '{}' and '{}' both mean '{}'", where, ts[it->second].name, ts[i].name, n);
      m.tensors.push_back({n, i});
    }
  }
  for (const auto& [i, name] : decoder_bias) {
    if (by_name.count(kMlmBias)) {
      m.duplicates.push_back({i, kMlmBias});
      m.dropped.push_back(name);
    } else {
      by_name.emplace(kMlmBias, i);
      m.tensors.push_back({kMlmBias, i});
    }
  }
  return m;
}

HfHeads hf_heads(const HfConfig& cfg, const std::set<std::string>& names, const std::string& config_path) {
  HfHeads h;
  std::string arch = cfg.architecture;
  if (arch.empty()) {
    // Old files (no "architectures"): read the heads off the tensors present.
    const bool mlm = names.count("cls.predictions.transform.dense.weight") > 0;
    const bool nsp = names.count("cls.seq_relationship.weight") > 0;
    if (names.count("qa_outputs.weight")) arch = "BertForQuestionAnswering";
    else if (names.count("classifier.weight")) arch = "BertForSequenceClassification";
    else if (mlm && nsp) arch = "BertForPreTraining";
    else if (mlm) arch = "BertForMaskedLM";
    else if (nsp) arch = "BertForNextSentencePrediction";
    else arch = "BertModel";
    h.inferred = true;
  }
  h.architecture = arch;
  HeadsConfig& k = h.heads;
  if (arch == "BertModel") {
  } else if (arch == "BertForPreTraining") {
    k.mlm = k.nsp = true;
  } else if (arch == "BertForMaskedLM") {
    k.mlm = true;
  } else if (arch == "BertForNextSentencePrediction") {
    k.nsp = true;
  } else if (arch == "BertForSequenceClassification") {
    // modeling_bert.py: num_labels == 1 (or problem_type "regression") trains with MSE.
    const bool regression = cfg.problem_type == "regression" || cfg.id2label.size() == 1;
    k.kind = regression ? HeadKind::kRegression : HeadKind::kSequenceClassification;
    k.labels = cfg.id2label;
    k.task = cfg.finetuning_task;
  } else if (arch == "BertForTokenClassification") {
    k.kind = HeadKind::kTokenClassification;
    k.labels = cfg.id2label;
    k.task = cfg.finetuning_task;
  } else if (arch == "BertForQuestionAnswering") {
    // qa_outputs = Linear(hidden, num_labels) with num_labels = 2 (start, end); the shape check
    // refuses anything else.
    k.kind = HeadKind::kQuestionAnswering;
    k.task = cfg.finetuning_task;
  } else {
    fail("{}: architectures[0] '{}' is not supported (expected BertModel, BertForPreTraining, "
         "BertForMaskedLM, BertForNextSentencePrediction, BertForSequenceClassification, "
         "BertForTokenClassification or BertForQuestionAnswering)",
         config_path, arch);
  }
  try {
    k.validate();
  } catch (const Error& e) {
    fail("{}: {} (architecture {}, id2label)", config_path, e.what(), arch);
  }
  // Heads of the architecture whose tensors are absent: left out, as transformers would have to
  // initialise them at random (it loads such files with a "newly initialized" warning).
  auto present = [&](const char* prefix) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
  };
  auto drop = [&](const char* head, const char* what, const char* prefix) {
    h.missing.push_back(head);
    h.warnings.push_back(fmt::format(
        "{}: architecture {} has the {} ({}*), but the weights have no such tensor: converted "
        "without it (transformers would initialise it at random)",
        config_path, arch, what, prefix));
  };
  if (k.mlm && !present("cls.predictions.")) {
    k.mlm = false;
    drop("mlm", "MLM head", "cls.predictions.");
  }
  if (k.nsp && !present("cls.seq_relationship.")) {
    k.nsp = false;
    drop("nsp", "NSP head", "cls.seq_relationship.");
  }
  const HeadKind kind = k.resolved_kind();
  const bool qa = kind == HeadKind::kQuestionAnswering;
  if (kind != HeadKind::kNone && !present(qa ? "qa_outputs." : "classifier.")) {
    drop(qa ? "qa_outputs" : "classifier", qa ? "span head" : "classification head",
         qa ? "qa_outputs." : "classifier.");
    k.kind = HeadKind::kNone;
    k.labels.clear();
    k.task.clear();
  }
  return h;
}

std::string hf_architecture(const HeadsConfig& heads) {
  switch (heads.resolved_kind()) {
    case HeadKind::kSequenceClassification:
    case HeadKind::kRegression: return "BertForSequenceClassification";
    case HeadKind::kTokenClassification: return "BertForTokenClassification";
    case HeadKind::kQuestionAnswering: return "BertForQuestionAnswering";
    case HeadKind::kNone: break;
  }
  if (heads.mlm && heads.nsp) return "BertForPreTraining";
  if (heads.mlm) return "BertForMaskedLM";
  if (heads.nsp) return "BertForNextSentencePrediction";
  return "BertModel";
}

}  // namespace bertrt::convert
