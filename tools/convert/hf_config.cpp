#include "convert/hf_config.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "convert/json_fields.h"
#include "core/error.h"
#include "core/json_excerpt.h"
#include "tokenizer/tokenizer.h"

namespace bertrt::convert {
namespace {

using nlohmann::json;

constexpr int kMaxNumLabels = 100000;

// id2label {"0": "O", "1": "B-PER", ...} → labels ordered by id; the ids must be exactly 0..n-1.
std::vector<std::string> labels_by_id(const std::string& path, const json& id2label) {
  if (!id2label.is_object()) fail("{}: field 'id2label' must be an object of id → label", path);
  std::map<long, std::string> by_id;
  for (const auto& [key, value] : id2label.items()) {
    size_t used = 0;
    long id = -1;
    try {
      id = std::stol(key, &used);
    } catch (const std::exception&) {
    }
    if (used != key.size() || id < 0) fail("{}: id2label key '{}' is not a label id", path, key);
    if (!value.is_string()) fail("{}: id2label['{}'] must be a string", path, key);
    by_id[id] = value.get<std::string>();
  }
  std::vector<std::string> labels;
  for (const auto& [id, label] : by_id) {
    if (id != long(labels.size()))
      fail("{}: id2label ids must be 0..{} without gaps, id {} is missing", path, by_id.size() - 1, labels.size());
    labels.push_back(label);
  }
  return labels;
}

std::string hidden_act(const std::string& path, const json& j) {
  const std::string act = get_string(path, j, "hidden_act", "gelu");
  if (act == "gelu" || act == "gelu_new" || act == "gelu_pytorch_tanh") return act;
  if (act == "gelu_python") return "gelu";  // transformers: the same erf GELU, written in Python
  fail("{}: hidden_act '{}' is not supported (expected gelu, gelu_new or gelu_pytorch_tanh)", path, act);
}

}  // namespace

HfConfig read_hf_config(const std::string& path) {
  const json j = read_json_object(path);
  HfConfig h;
  BertConfig& c = h.config;
  const BertConfig d;  // HF BertConfig defaults
  if (present(j, "model_type") && get_string(path, j, "model_type", "") != "bert")
    fail("{}: model_type '{}' is not supported (expected bert)", path,
         json_excerpt(j["model_type"]));
  const std::string pos = get_string(path, j, "position_embedding_type", "absolute");
  if (pos != "absolute")
    fail("{}: position_embedding_type '{}' is not supported (expected absolute)", path, pos);
  if (get_bool(path, j, "is_decoder", false) || get_bool(path, j, "add_cross_attention", false))
    fail("{}: is_decoder/add_cross_attention models are not supported (bertrt runs the encoder)", path);
  c.vocab_size = get_int(path, j, "vocab_size", std::nullopt);
  c.hidden_size = get_int(path, j, "hidden_size", std::nullopt);
  c.num_hidden_layers = get_int(path, j, "num_hidden_layers", std::nullopt);
  c.num_attention_heads = get_int(path, j, "num_attention_heads", std::nullopt);
  c.intermediate_size = get_int(path, j, "intermediate_size", std::nullopt);
  c.hidden_act = hidden_act(path, j);
  c.max_position_embeddings = get_int(path, j, "max_position_embeddings", d.max_position_embeddings);
  c.type_vocab_size = get_int(path, j, "type_vocab_size", d.type_vocab_size);
  c.layer_norm_eps = get_float(path, j, "layer_norm_eps", d.layer_norm_eps);
  c.pad_token_id = get_int(path, j, "pad_token_id", d.pad_token_id);
  c.initializer_range = get_float(path, j, "initializer_range", d.initializer_range);
  // It sets the std of the weights the checkpoint lacks (the pooler): N(0, -1²) is no init.
  if (!(c.initializer_range > 0.0f) || !std::isfinite(c.initializer_range))
    fail("{}: field 'initializer_range' must be a positive number, got {}", path,
         json_excerpt(j["initializer_range"]));
  c.hidden_dropout_prob = get_float(path, j, "hidden_dropout_prob", d.hidden_dropout_prob);
  c.attention_probs_dropout_prob =
      get_float(path, j, "attention_probs_dropout_prob", d.attention_probs_dropout_prob);
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }

  if (present(j, "architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      fail("{}: field 'architectures' must be a non-empty list of names", path);
    h.architecture = a[0].get<std::string>();
  }
  h.finetuning_task = get_string(path, j, "finetuning_task", "");
  h.problem_type = get_string(path, j, "problem_type", "");
  // Checked where it is used (import_hf): a record it cannot keep is dropped with a warning.
  if (present(j, "bertrt_task")) h.bertrt_task = j["bertrt_task"].dump();
  if (present(j, "id2label")) {
    h.id2label = labels_by_id(path, j["id2label"]);
    h.has_id2label = true;
  } else {
    // PretrainedConfig: num_labels (older files: _num_labels) → LABEL_0..LABEL_{n-1}; default 2.
    int n = get_int(path, j, "num_labels", get_int(path, j, "_num_labels", 2));
    if (n < 1) fail("{}: field 'num_labels' must be positive, got {}", path, n);
    // Checked before the LABEL_i names are made (2^31 of them would take tens of GB); the TF
    // reader caps the classifier rows the same way.
    if (n > kMaxNumLabels)
      fail("{}: field 'num_labels' = {} exceeds the supported maximum {}", path, n, kMaxNumLabels);
    for (int i = 0; i < n; ++i) h.id2label.push_back("LABEL_" + std::to_string(i));
  }
  return h;
}

namespace {

// A special token given as "[UNK]" or as an AddedToken {"content": "[UNK]", ...}.
std::optional<std::string> special_token(const std::string& path, const json& j, const char* key) {
  if (!present(j, key)) return std::nullopt;
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  fail("{}: field '{}' must be a token string or {{\"content\": ...}}, got {}", path, key,
       json_excerpt(v));
}

void apply_special_tokens(const std::string& path, const json& j, TokenizerSpec& s) {
  const std::pair<const char*, std::string*> fields[] = {{"unk_token", &s.unk_token}, {"sep_token", &s.sep_token},
                                                         {"pad_token", &s.pad_token}, {"cls_token", &s.cls_token},
                                                         {"mask_token", &s.mask_token}};
  for (const auto& [key, out] : fields)
    if (auto t = special_token(path, j, key)) *out = *t;
}


}  // namespace

HfTokenizer read_hf_tokenizer(const std::string& vocab_path, const std::string& dir,
                              std::vector<std::string>& warnings) {
  namespace fs = std::filesystem;
  HfTokenizer t;
  TokenizerSpec& s = t.spec;
  s.vocab = Vocab::read_tokens(vocab_path);
  // special_tokens_map.json first; tokenizer_config.json (what from_pretrained reads last) wins.
  const std::string map_path = (fs::path(dir) / "special_tokens_map.json").string();
  if (fs::exists(map_path)) apply_special_tokens(map_path, read_json_object(map_path), s);
  const std::string cfg_path = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(cfg_path)) {
    const json j = read_json_object(cfg_path);
    s.do_lower_case = get_bool(cfg_path, j, "do_lower_case", s.do_lower_case);
    if (present(j, "strip_accents")) s.strip_accents = get_bool(cfg_path, j, "strip_accents", false);
    s.tokenize_chinese_chars = get_bool(cfg_path, j, "tokenize_chinese_chars", s.tokenize_chinese_chars);
    apply_special_tokens(cfg_path, j, s);
    // model_max_length (older files: max_len); transformers writes int(1e30) for "no limit".
    for (const char* key : {"model_max_length", "max_len"}) {
      if (!present(j, key)) continue;
      if (!j[key].is_number())
        fail("{}: field '{}' must be a number, got {}", cfg_path, key, json_excerpt(j[key]));
      const double v = j[key].get<double>();
      if (v < 1)
        fail("{}: field '{}' must be positive, got {}", cfg_path, key, json_excerpt(j[key]));
      if (v <= 1e9) t.model_max_length = static_cast<long long>(v);
      break;
    }
    if (!get_bool(cfg_path, j, "do_basic_tokenize", true))
      warnings.push_back(cfg_path + ": do_basic_tokenize is false; bertrt always splits on whitespace "
                                    "and punctuation before WordPiece");
    if (present(j, "never_split") && !(j["never_split"].is_array() && j["never_split"].empty()))
      warnings.push_back(cfg_path + ": never_split is ignored (bertrt keeps only the special tokens whole)");
  }
  for (const std::string* tok : {&s.unk_token, &s.sep_token, &s.pad_token, &s.cls_token, &s.mask_token}) {
    bool found = false;
    for (const std::string& v : s.vocab) found = found || v == *tok;
    if (!found) fail("{}: special token '{}' is not in the vocab", vocab_path, *tok);
  }
  return t;
}

}  // namespace bertrt::convert
