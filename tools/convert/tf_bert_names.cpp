#include "convert/tf_bert_names.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>
#include <map>

#include "core/error.h"
#include "io/config_check.h"
#include "model/params.h"

namespace bertrt::convert {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Scope names of optimizer state and bookkeeping that the original and common TF optimizers add
// next to the weights (BERT's AdamWeightDecayOptimizer: adam_m/adam_v; tf.train.AdamOptimizer:
// Adam, Adam_1, beta1_power, beta2_power; MomentumOptimizer: Momentum; LAMB; mixed-precision
// loss scaling). transformers skips the first five the same way.
const char* skip_reason(const std::string& part) {
  static const std::map<std::string, const char*> kSkip = {
      {"adam_m", "optimizer slot"}, {"adam_v", "optimizer slot"},
      {"AdamWeightDecayOptimizer", "optimizer slot"}, {"AdamWeightDecayOptimizer_1", "optimizer slot"},
      {"Adam", "optimizer slot"}, {"Adam_1", "optimizer slot"},
      {"beta1_power", "optimizer state"}, {"beta2_power", "optimizer state"},
      {"Momentum", "optimizer slot"}, {"lamb_m", "optimizer slot"}, {"lamb_v", "optimizer slot"},
      {"LAMB", "optimizer slot"}, {"LAMB_1", "optimizer slot"},
      {"ExponentialMovingAverage", "moving average"},
      {"loss_scale", "loss-scale state"}, {"good_steps", "loss-scale state"},
      {"current_loss_scale", "loss-scale state"},
      {"global_step", "training step counter"}};
  auto it = kSkip.find(part);
  return it == kSkip.end() ? nullptr : it->second;
}

// transformers' re.fullmatch(r"[A-Za-z]+_\d+"): "layer_11" → ("layer", "11").
bool indexed_scope(const std::string& part, std::string* base, std::string* index) {
  const size_t us = part.rfind('_');
  if (us == std::string::npos || us == 0 || us + 1 == part.size()) return false;
  for (size_t i = 0; i < us; ++i)
    if (!std::isalpha(static_cast<unsigned char>(part[i]))) return false;
  for (size_t i = us + 1; i < part.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(part[i]))) return false;
  *base = part.substr(0, us);
  *index = part.substr(us + 1);
  return true;
}

std::string shape_str(const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

bool is_float(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64";
}

}  // namespace

TfNameMapping map_tf_bert_name(const std::string& tf_name) {
  TfNameMapping m;
  const std::vector<std::string> parts = split(tf_name, '/');
  for (const std::string& p : parts) {
    if (const char* why = skip_reason(p)) {
      m.skip = true;
      m.skip_reason = fmt::format("{} ({})", why, p);
      return m;
    }
  }
  // run_squad.py's span head: output_weights [2, H] (row 0 start, row 1 end; logits =
  // matmul(final_hidden, output_weights, transpose_b=True)) is already nn.Linear's [out, in],
  // exactly BertForQuestionAnswering's qa_outputs.
  if (tf_name == "cls/squad/output_weights") return {false, "", "qa_outputs.weight", false};
  if (tf_name == "cls/squad/output_bias") return {false, "", "qa_outputs.bias", false};
  if (parts.size() >= 2 && parts[0] == "cls" && parts[1] == "squad")
    fail(
        "TF variable '{}': not a variable of run_squad.py's span head (expected "
        "cls/squad/output_weights and cls/squad/output_bias)",
        tf_name);
  // run_classifier.py creates the classifier at the top level, outside any scope.
  if (tf_name == "output_weights") return {false, "", "classifier.weight", false};
  if (tf_name == "output_bias") return {false, "", "classifier.bias", false};

  std::string hf;
  for (const std::string& p : parts) {
    if (p.empty()) fail("TF variable '{}': empty scope name", tf_name);
    std::string base, index, piece;
    if (p == "kernel" || p == "gamma" || p == "output_weights") piece = "weight";
    else if (p == "beta" || p == "output_bias") piece = "bias";
    else if (indexed_scope(p, &base, &index)) piece = base + "." + index;
    else piece = p;
    hf += (hf.empty() ? "" : ".") + piece;
  }
  if (ends_with(parts.back(), "_embeddings")) hf += ".weight";
  m.hf_name = hf;
  m.transpose = parts.back() == "kernel";
  return m;
}

BertConfig read_bert_config_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open bert_config.json", path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    fail("{}: not valid JSON: {}", path, e.what());
  }
  if (!j.is_object()) fail("{}: expected a JSON object", path);
  BertConfig c;
  auto get_int = [&](const char* key, int* out, bool required) {
    if (!j.contains(key)) {
      if (required) fail("{}: missing field '{}'", path, key);
      return;
    }
    const auto& v = j[key];
    if (!v.is_number_integer()) fail("{}: field '{}' must be an integer", path, key);
    const int64_t x = v.get<int64_t>();
    if (x < 0 || x > (int64_t(1) << 30)) fail("{}: field '{}' = {} is out of range", path, key, x);
    *out = static_cast<int>(x);
  };
  auto get_float = [&](const char* key, float* out) {
    if (!j.contains(key)) return;
    if (!j[key].is_number()) fail("{}: field '{}' must be a number", path, key);
    *out = j[key].get<float>();
  };
  get_int("vocab_size", &c.vocab_size, true);
  get_int("hidden_size", &c.hidden_size, true);
  get_int("num_hidden_layers", &c.num_hidden_layers, true);
  get_int("num_attention_heads", &c.num_attention_heads, true);
  get_int("intermediate_size", &c.intermediate_size, true);
  get_int("max_position_embeddings", &c.max_position_embeddings, true);
  get_int("type_vocab_size", &c.type_vocab_size, false);
  get_int("pad_token_id", &c.pad_token_id, false);
  get_float("initializer_range", &c.initializer_range);
  get_float("hidden_dropout_prob", &c.hidden_dropout_prob);
  get_float("attention_probs_dropout_prob", &c.attention_probs_dropout_prob);
  get_float("layer_norm_eps", &c.layer_norm_eps);  // absent in Google's files: TF's 1e-12
  if (j.contains("hidden_act")) {
    if (!j["hidden_act"].is_string()) fail("{}: field 'hidden_act' must be a string", path);
    const std::string act = j["hidden_act"].get<std::string>();
    // modeling.py's gelu is 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))): HF's "gelu_new".
    if (act == "gelu" || act == "gelu_new") c.hidden_act = "gelu_new";
    else fail("{}: hidden_act '{}' is not supported (the original BERT code's 'gelu' is)", path, act);
  } else {
    c.hidden_act = "gelu_new";
  }
  try {
    c.validate();
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
  return c;
}

TfBertCheckpoint map_tf_bert(const CheckpointReader& reader, const BertConfig& config,
                             const std::string& where) {
  const std::vector<CheckpointTensor>& ts = reader.tensors();
  TfBertCheckpoint out;
  out.config = config;

  struct Candidate {
    size_t index;
    TfNameMapping m;
  };
  std::vector<Candidate> weights;
  for (size_t i = 0; i < ts.size(); ++i) {
    TfNameMapping m = map_tf_bert_name(ts[i].name);
    if (m.skip) out.skipped.emplace_back(ts[i].name, m.skip_reason);
    else weights.push_back({i, std::move(m)});
  }

  // Heads from what is present; the classifier's label count from its output_weights rows.
  for (const Candidate& c : weights) {
    const std::string& n = c.m.hf_name;
    if (n.rfind("cls.predictions.", 0) == 0) out.heads.mlm = true;
    if (n.rfind("cls.seq_relationship.", 0) == 0) out.heads.nsp = true;
    if (n == "classifier.weight") {
      const CheckpointTensor& t = ts[c.index];
      if (t.shape.size() != 2 || t.shape[0] < 1 || t.shape[0] > 100000)
        fail("{}: classifier variable '{}' has shape {}, expected [num_labels, {}]", t.location,
             t.name, shape_str(t.shape), config.hidden_size);
      for (int64_t k = 0; k < t.shape[0]; ++k) out.heads.labels.push_back(std::to_string(k));
    }
  }
  if (!out.heads.classifier())
    for (const Candidate& c : weights)
      if (c.m.hf_name == "classifier.bias")
        fail("{}: '{}' is present without output_weights", ts[c.index].location, ts[c.index].name);
  for (const Candidate& c : weights) {
    if (c.m.hf_name.rfind("qa_outputs.", 0) != 0) continue;
    if (out.heads.classifier())
      fail(
          "{}: TF variable '{}' (run_squad.py's span head) next to a classifier (output_weights): "
          "a model carries one fine-tuning head",
          ts[c.index].location, ts[c.index].name);
    out.heads.kind = HeadKind::kQuestionAnswering;
  }

  // Before the layout (proportional to num_hidden_layers): the config must fit the variables.
  {
    std::map<std::string, const std::vector<int64_t>*> shapes;  // by HF name
    TensorsPresent present;
    for (const Candidate& c : weights) shapes[c.m.hf_name] = &ts[c.index].shape;
    present.count = weights.size();
    present.shape_of = [&](const std::string& name) -> const std::vector<int64_t>* {
      const auto it = shapes.find(name);
      return it == shapes.end() ? nullptr : it->second;
    };
    check_config_against_tensors(config, present, where);
  }
  const ParamLayout layout = bert_param_layout(config, out.heads);
  std::map<std::string, const Candidate*> by_hf;
  for (const Candidate& c : weights) {
    const CheckpointTensor& t = ts[c.index];
    const ParamInfo* p = layout.find(c.m.hf_name);
    if (!p)
      fail("{}: TF variable '{}' (HF name '{}') is not a weight of BERT with this config ({} "
           "layers) and is not a known optimizer variable",
           t.location, t.name, c.m.hf_name, config.num_hidden_layers);
    if (!is_float(t.dtype))
      fail("{}: TF variable '{}' has dtype {}, expected a float dtype", t.location, t.name, t.dtype);
    std::vector<int64_t> expected = p->shape;  // in the TF layout
    if (c.m.transpose) {
      if (expected.size() != 2)
        fail("TF variable '{}': a kernel maps to the {}-D weight '{}'", t.name, expected.size(),
             p->name);
      std::swap(expected[0], expected[1]);
    }
    if (t.shape != expected)
      fail("{}: TF variable '{}' has shape {}, but bert_config.json implies {} (HF '{}' {})",
           t.location, t.name, shape_str(t.shape), shape_str(expected), p->name,
           shape_str(p->shape));
    by_hf[c.m.hf_name] = &c;
  }
  for (const ParamInfo& p : layout.params()) {
    auto it = by_hf.find(p.name);
    if (it == by_hf.end() && p.name.rfind("bert.pooler.", 0) == 0) {
      out.absent.push_back(p.name);
      continue;
    }
    if (it == by_hf.end())
      fail("TF checkpoint: no variable for the BERT weight '{}' {} (a {}-layer config with the "
           "heads present needs it)",
           p.name, shape_str(p.shape), config.num_hidden_layers);
    const Candidate& c = *it->second;
    out.tensors.push_back({ts[c.index].name, p.name, c.index, c.m.transpose, p.shape});
  }
  return out;
}

TfBertCheckpoint map_tf_bert(const CheckpointReader& reader, const std::string& bert_config_json) {
  return map_tf_bert(reader, read_bert_config_json(bert_config_json), bert_config_json);
}

std::vector<float> read_mapped_f32(const CheckpointReader& reader, const MappedTensor& t) {
  const CheckpointTensor& src = reader.tensors().at(t.source_index);
  std::vector<float> v = bytes_to_f32(src, reader.read(t.source_index));
  if (!t.transpose) return v;
  // TF kernel [in, out] → nn.Linear weight [out, in] = hf_shape.
  const size_t rows = static_cast<size_t>(t.hf_shape[0]), cols = static_cast<size_t>(t.hf_shape[1]);
  std::vector<float> out(v.size());
  for (size_t i = 0; i < cols; ++i)
    for (size_t o = 0; o < rows; ++o) out[o * cols + i] = v[i * rows + o];
  return out;
}

}  // namespace bertrt::convert
