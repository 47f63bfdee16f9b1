#include "convert/st_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "convert/convert_input.h"
#include "convert/hf_import.h"
#include "convert/json_fields.h"
#include "convert/tensor_encode.h"
#include "core/error.h"
#include "core/json_excerpt.h"

namespace bertrt::convert {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kTransformer = "sentence_transformers.models.Transformer";
constexpr const char* kPooling = "sentence_transformers.models.Pooling";
constexpr const char* kDense = "sentence_transformers.models.Dense";
constexpr const char* kNormalize = "sentence_transformers.models.Normalize";

struct Module {
  std::string type, path;  // path relative to the folder
};

std::vector<Module> read_modules(const std::string& file) {
  const json j = read_json_file(file);
  if (!j.is_array() || j.empty()) fail("{}: expected a non-empty list of modules", file);
  std::vector<Module> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& m = j[i];
    if (!m.is_object()) fail("{}: module {} is not an object", file, i);
    Module mod{get_string(file, m, "type", ""), get_string(file, m, "path", "")};
    if (mod.type.empty()) fail("{}: module {} has no 'type'", file, i);
    // A path stays inside the folder: no absolute path, no "..".
    const fs::path p(mod.path);
    if (p.is_absolute() || std::any_of(p.begin(), p.end(), [](const fs::path& c) { return c == ".."; }))
      fail("{}: module {} path '{}' leaves the folder", file, i, mod.path);
    out.push_back(std::move(mod));
  }
  return out;
}

// Every key of 1_Pooling/config.json that sentence-transformers writes; anything else (a pooling
// mode this build does not know) is refused rather than silently ignored.
PoolingConfig read_pooling(const std::string& file, int hidden_size) {
  const json j = read_json_object(file);
  static const std::set<std::string> known = {
      "word_embedding_dimension", "pooling_mode_cls_token", "pooling_mode_mean_tokens",
      "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
      "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken", "include_prompt"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key))
      fail("{}: key '{}' is not a pooling setting bertrt knows (pooling_mode_cls_token, _mean_tokens, "
           "_max_tokens, _mean_sqrt_len_tokens, _weightedmean_tokens, _lasttoken, include_prompt)",
           file, key);
  const int dim = get_int(file, j, "word_embedding_dimension", hidden_size);
  if (dim != hidden_size)
    fail("{}: word_embedding_dimension is {}, but the Transformer's hidden_size is {}", file, dim,
         hidden_size);
  PoolingConfig p;
  p.cls_token = get_bool(file, j, "pooling_mode_cls_token", false);
  p.mean_tokens = get_bool(file, j, "pooling_mode_mean_tokens", false);
  p.max_tokens = get_bool(file, j, "pooling_mode_max_tokens", false);
  p.mean_sqrt_len_tokens = get_bool(file, j, "pooling_mode_mean_sqrt_len_tokens", false);
  p.weightedmean_tokens = get_bool(file, j, "pooling_mode_weightedmean_tokens", false);
  p.lasttoken = get_bool(file, j, "pooling_mode_lasttoken", false);
  p.include_prompt = get_bool(file, j, "include_prompt", true);
  if (p.modes() == 0) fail("{}: no pooling_mode_* is true", file);
  return p;
}

// The weights file of a Dense folder, as Dense.load looks for them.
std::string dense_weights(const fs::path& dir) {
  for (const char* name : {"model.safetensors", "pytorch_model.bin"})
    if (fs::exists(dir / name)) return (dir / name).string();
  fail("{}: no model.safetensors or pytorch_model.bin (the Dense module's weights)", dir.string());
}

void read_dense(ConvertedModel& m, const fs::path& dir, const std::string& path, int in_width,
                const ConvertOptions& opts, DenseConfig& d) {
  const std::string file = (dir / "config.json").string();
  const json j = read_json_object(file);
  d.path = path;
  d.in_features = get_int(file, j, "in_features", std::nullopt);
  d.out_features = get_int(file, j, "out_features", std::nullopt);
  d.bias = get_bool(file, j, "bias", true);
  d.activation_function =
      get_string(file, j, "activation_function", "torch.nn.modules.activation.Tanh");
  if (d.in_features != in_width)
    fail("{}: in_features is {}, but the vector before it has {} dimensions", file,
         d.in_features, in_width);
  if (!known_dense_activation(d.activation_function))
    fail("{}: activation_function '{}' is not one of torch.nn.modules.activation.Tanh, ReLU, GELU, "
         "Sigmoid or torch.nn.modules.linear.Identity", file, d.activation_function);
  const std::string weights = dense_weights(dir);
  const auto reader = open_checkpoint(weights);
  auto take = [&](const char* key, std::vector<int64_t> shape) {
    for (size_t i = 0; i < reader->tensors().size(); ++i) {
      const CheckpointTensor& t = reader->tensors()[i];
      if (t.name != key) continue;
      if (t.shape != shape)
        fail("{}: tensor '{}' has shape [{}], but {} implies [{}]", weights, key,
             fmt::join(t.shape, ", "), file, fmt::join(shape, ", "));
      std::vector<float> v = bytes_to_f32(t, reader->read(i));
      for (float x : v)
        if (!std::isfinite(x)) fail("{}: tensor '{}' holds a value that is not finite", weights, key);
      emit_owned(m, path + "." + key, shape, v, opts.dtype);
      return;
    }
    fail("{}: tensor '{}' is missing", weights, key);
  };
  take("linear.weight", {d.out_features, d.in_features});
  if (d.bias) take("linear.bias", {d.out_features});
  std::set<std::string> expected = {"linear.weight"};
  if (d.bias) expected.insert("linear.bias");
  for (const CheckpointTensor& t : reader->tensors())
    if (!expected.count(t.name))
      fail("{}: tensor '{}' is not one a Dense module has (linear.weight{})", weights, t.name,
           d.bias ? ", linear.bias" : "; bias is false in config.json");
}

// config_sentence_transformers.json: the prompts and the similarity function.
void read_st_config(const std::string& file, EmbeddingConfig& e) {
  if (!fs::exists(file)) return;
  const json j = read_json_object(file);
  if (present(j, "prompts")) {
    const json& p = j["prompts"];
    if (!p.is_object()) fail("{}: field 'prompts' must be an object of name → text", file);
    for (const auto& [name, text] : p.items()) {
      if (!text.is_string())
        fail("{}: prompt '{}' must be a string, got {}", file, name, json_excerpt(text));
      e.prompts.emplace_back(name, text.get<std::string>());
    }
  }
  e.default_prompt_name = get_string(file, j, "default_prompt_name", "");
  e.similarity_fn_name = get_string(file, j, "similarity_fn_name", "cosine");
}

}  // namespace

bool is_sentence_transformers_folder(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / "modules.json", ec);
}

ConvertedModel import_sentence_transformers(const std::string& dir, const ConvertOptions& opts) {
  const fs::path root(dir);
  const std::string modules_file = (root / "modules.json").string();
  const std::vector<Module> modules = read_modules(modules_file);
  auto refuse_order = [&](size_t i) {
    fail("{}: module {} is {}; bertrt reads Transformer, Pooling, Dense..., Normalize in this "
         "order", modules_file, i, modules[i].type);
  };
  if (modules[0].type != kTransformer) refuse_order(0);
  const fs::path tdir = root / modules[0].path;
  ConvertOptions hf_opts = opts;
  hf_opts.pooler_unused = true;  // sentence-transformers saves BertModel without its pooler
  ConvertedModel m = import_hf(find_input(tdir.string()), hf_opts);
  if (m.contents.heads.resolved_kind() != HeadKind::kNone || m.contents.heads.mlm ||
      m.contents.heads.nsp)
    fail("{}: the Transformer module is a {}, not a BertModel", (tdir / "config.json").string(),
         m.contents.metadata["architecture"]);

  EmbeddingConfig e;
  const int H = m.contents.config.hidden_size;
  // Without a max_seq_length, Transformer takes min(max_position_embeddings, the tokenizer's
  // model_max_length).
  {
    const auto it = m.contents.metadata.find("tokenizer.model_max_length");
    if (it != m.contents.metadata.end()) {
      const long long v = std::stoll(it->second);
      if (v < m.contents.config.max_position_embeddings) e.max_seq_length = int(v);
    }
  }
  const std::string sbert = (tdir / "sentence_bert_config.json").string();
  if (fs::exists(sbert)) {
    const json j = read_json_object(sbert);
    e.max_seq_length = get_int(sbert, j, "max_seq_length", e.max_seq_length);
    e.do_lower_case = get_bool(sbert, j, "do_lower_case", false);
    if (e.max_seq_length < 0 || e.max_seq_length > m.contents.config.max_position_embeddings)
      fail("{}: max_seq_length {} is outside [0, max_position_embeddings {}]", sbert,
           e.max_seq_length, m.contents.config.max_position_embeddings);
  }
  size_t i = 1;
  if (i >= modules.size() || modules[i].type != kPooling)
    fail("{}: module 1 must be {} (bertrt keeps the pooling in the model file)", modules_file,
         kPooling);
  e.pooling = read_pooling((root / modules[i].path / "config.json").string(), H);
  ++i;
  int width = e.pooled_dim(H);
  for (; i < modules.size() && modules[i].type == kDense; ++i) {
    DenseConfig d;
    read_dense(m, root / modules[i].path, modules[i].path, width, opts, d);
    width = d.out_features;
    e.dense.push_back(std::move(d));
  }
  if (i < modules.size() && modules[i].type == kNormalize) {
    e.normalize = true;
    ++i;
  }
  if (i < modules.size()) {
    const std::string& t = modules[i].type;
    if (t != kTransformer && t != kPooling && t != kDense && t != kNormalize)
      fail("{}: module {} type '{}' is not one bertrt runs (Transformer, Pooling, Dense, "
           "Normalize)", modules_file, i, t);
    refuse_order(i);
  }
  read_st_config((root / "config_sentence_transformers.json").string(), e);
  try {
    e.validate(H, m.contents.config.max_position_embeddings);
  } catch (const Error& err) {
    fail("{}: {}", dir, err.what());
  }
  m.contents.heads.embedding = std::move(e);
  m.contents.metadata["architecture"] = "SentenceTransformer";
  m.contents.metadata["source_path"] = dir;
  return m;
}

}  // namespace bertrt::convert
