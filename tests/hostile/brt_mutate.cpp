#include "brt_mutate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace bertrt::hostile {

namespace {

using Rng = std::minstd_rand;

uint64_t pick(Rng& rng, uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); }
bool coin(Rng& rng, int one_in = 2) { return pick(rng, uint64_t(one_in)) == 0; }

template <typename T>
T one_of(Rng& rng, std::initializer_list<T> v) {
  return *(v.begin() + pick(rng, v.size()));
}

int64_t special_int(Rng& rng) {
  return one_of<int64_t>(rng, {0, 1, -1, 2, 3, 7, 64, 127, 128, -128, -129, 255, 4096, 4097, 65536,
                               1 << 20, (1 << 24) + 1, std::numeric_limits<int32_t>::max(),
                               std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int64_t>::max(),
                               std::numeric_limits<int64_t>::min()});
}

float special_float(Rng& rng) {
  const float inf = std::numeric_limits<float>::infinity();
  return one_of<float>(rng, {0.0f, -0.0f, 1.0f, -1.0f, 1e-12f, 1e-45f, 0.1f, 0.5f, 0.99f, 1.5f,
                             1e30f, 3e38f, std::numeric_limits<float>::max(), inf, -inf,
                             std::numeric_limits<float>::quiet_NaN()});
}

std::string special_text(Rng& rng) {
  switch (pick(rng, 8)) {
    case 0: return "";
    case 1: return "a\tb";
    case 2: return "line\nforged";
    case 3: return "\x1b[31mred";
    case 4: return std::string("nul\0byte", 8);
    case 5: return "\xc2\x85next";  // U+0085 NEL
    case 6: return "\xff\xfe not utf-8";
    default: return std::string(pick(rng, 3000) + 1, char('a' + pick(rng, 26)));
  }
}

// n small f32 values in [-1, 1], as bytes.
std::string random_floats(uint64_t n, Rng& rng) {
  std::string bytes(n * 4, '\0');
  for (uint64_t i = 0; i < n; ++i) {
    const float f = float(int(rng() % 2001) - 1000) / 1000.0f;
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  return bytes;
}

std::vector<std::unique_ptr<fb::TensorT>>* tensor_list(BrtParts& p, Rng& rng) {
  if (p.model.training_state && !p.model.training_state->optimizer_tensors.empty() && coin(rng, 4))
    return &p.model.training_state->optimizer_tensors;
  return &p.model.tensors;
}

fb::TensorT* any_tensor(BrtParts& p, Rng& rng) {
  auto* v = tensor_list(p, rng);
  if (v->empty()) return nullptr;
  return (*v)[pick(rng, v->size())].get();
}

std::string edit_offset(BrtParts& p, Rng& rng) {
  fb::TensorT* t = any_tensor(p, rng);
  if (!t) return "offset: no tensor";
  fb::TensorT* other = any_tensor(p, rng);
  switch (pick(rng, 6)) {
    case 0: if (other) t->offset = other->offset; break;  // alias
    case 1: t->offset += 64 * (int64_t(pick(rng, 9)) - 4); break;
    case 2: t->offset = p.data.size(); break;
    case 3: t->offset = uint64_t(0) - 64 * (pick(rng, 4) + 1); break;  // into the FlatBuffer
    case 4: t->offset += 1 + pick(rng, 63); break;  // misaligned
    default: t->offset = uint64_t(special_int(rng)); break;
  }
  return "offset of " + t->name;
}

std::string edit_size(BrtParts& p, Rng& rng) {
  fb::TensorT* t = any_tensor(p, rng);
  if (!t) return "size: no tensor";
  switch (pick(rng, 5)) {
    case 0: t->size *= 2; break;
    case 1: t->size = 0; break;
    case 2: t->size = t->size ? t->size - 1 : 1; break;
    case 3: t->size = p.data.size(); break;
    default: t->size = uint64_t(special_int(rng)); break;
  }
  return "size of " + t->name;
}

std::string edit_shape(BrtParts& p, Rng& rng) {
  fb::TensorT* t = any_tensor(p, rng);
  if (!t) return "shape: no tensor";
  switch (pick(rng, 5)) {
    case 0: if (!t->shape.empty()) t->shape[pick(rng, t->shape.size())] = special_int(rng); break;
    case 1: t->shape.push_back(one_of<int64_t>(rng, {1, 2, 0, -1})); break;
    case 2: if (!t->shape.empty()) t->shape.pop_back(); break;
    case 3:  // consistent with the size: a reshape the loader must check against the config
      if (t->shape.size() == 2) std::swap(t->shape[0], t->shape[1]);
      break;
    default: t->shape.assign(pick(rng, 12), 1); break;
  }
  return "shape of " + t->name;
}

std::string edit_dtype(BrtParts& p, Rng& rng) {
  fb::TensorT* t = any_tensor(p, rng);
  if (!t) return "dtype: no tensor";
  t->dtype = static_cast<fb::DType>(pick(rng, 7));
  if (coin(rng)) {  // keep the size consistent: f32 bytes read as f16 and the like
    const uint64_t item[] = {4, 2, 2, 1, 4, 1, 1};
    uint64_t n = 1;
    for (int64_t d : t->shape) n *= uint64_t(d);
    t->size = n * item[size_t(t->dtype)];
  }
  return "dtype of " + t->name;
}

std::string duplicate_records(BrtParts& p, Rng& rng) {
  auto* v = tensor_list(p, rng);
  if (v->empty()) return "duplicate: no tensor";
  const fb::TensorT& src = *(*v)[pick(rng, v->size())];
  const uint64_t n = 1 + pick(rng, coin(rng) ? 4 : 3000);
  for (uint64_t i = 0; i < n; ++i) {
    auto t = std::make_unique<fb::TensorT>(src);
    if (coin(rng, 3)) t->name += fmt::format(".{}", i);  // distinct names, one segment
    v->push_back(std::move(t));
  }
  return fmt::format("{} records of {}", n, src.name);
}

std::string edit_quantization(BrtParts& p, Rng& rng) {
  fb::TensorT* t = any_tensor(p, rng);
  if (!t) return "quantization: no tensor";
  if (!t->quantization || coin(rng, 4)) {
    t->quantization = std::make_unique<fb::QuantizationT>();
    const int64_t rows = t->shape.empty() ? 1 : t->shape[0];
    t->quantization->axis = coin(rng) ? 0 : -1;
    t->quantization->scales.assign(t->quantization->axis == 0 && rows > 0 && rows < 100000 ? size_t(rows) : 1, 0.01f);
    if (coin(rng)) {
      t->dtype = fb::DType::i8;
      uint64_t n = 1;
      for (int64_t d : t->shape) n *= uint64_t(d);
      t->size = n;
    }
  }
  fb::QuantizationT& q = *t->quantization;
  switch (pick(rng, 5)) {
    case 0: if (!q.scales.empty()) q.scales[pick(rng, q.scales.size())] = special_float(rng); break;
    case 1: q.zero_points.assign(coin(rng) ? 1 : q.scales.size(), special_int(rng)); break;
    case 2: q.axis = int32_t(special_int(rng) % 5); break;
    case 3: q.scales.push_back(special_float(rng)); break;
    default: t->quantization.reset(); break;
  }
  return "quantization of " + t->name;
}

std::string edit_vocab(BrtParts& p, Rng& rng) {
  if (!p.model.tokenizer) return "vocab: none";
  auto& v = p.model.tokenizer->vocab;
  switch (pick(rng, 6)) {
    case 0: {  // many entries, one text: shared when share_strings
      const std::string s = v.empty() ? "x" : v[pick(rng, v.size())];
      const uint64_t n = 1 + pick(rng, 40000);
      for (uint64_t i = 0; i < n; ++i) v.push_back(s);
      return fmt::format("vocab + {} copies", n);
    }
    case 1: if (!v.empty()) v[pick(rng, v.size())] = special_text(rng); return "vocab token text";
    case 2: v.clear(); return "vocab emptied";
    case 3: if (!v.empty()) v.resize(1 + pick(rng, v.size())); return "vocab truncated";
    case 4: {  // one long string, then many entries pointing at it
      const std::string s(1000 + pick(rng, 3000), 'w');
      for (uint64_t i = 0, n = 2 + pick(rng, 5000); i < n; ++i) v.push_back(s);
      return "vocab long shared token";
    }
    default:
      p.model.tokenizer->max_input_chars_per_word = int32_t(special_int(rng));
      p.model.tokenizer->strip_accents = static_cast<fb::TriState>(pick(rng, 5));
      return "tokenizer numbers";
  }
}

std::string edit_heads(BrtParts& p, Rng& rng) {
  if (!p.model.heads) p.model.heads = std::make_unique<fb::HeadsT>();
  fb::HeadsT& h = *p.model.heads;
  switch (pick(rng, 5)) {
    case 0: h.kind = static_cast<fb::HeadKind>(pick(rng, 7)); return "head kind";
    case 1: {
      const uint64_t n = 1 + pick(rng, coin(rng) ? 8 : 60000);
      const bool dup = coin(rng, 4);
      for (uint64_t i = 0; i < n; ++i) h.labels.push_back(dup ? "same" : fmt::format("L{}", i));
      return fmt::format("{} labels", n);
    }
    case 2: if (!h.labels.empty()) h.labels[pick(rng, h.labels.size())] = special_text(rng); return "label text";
    case 3: h.labels.clear(); return "labels cleared";
    default: h.task = coin(rng) ? special_text(rng) : one_of<std::string>(rng, {"sst2", "squad", "tsv", "conll2003", "stsb", "x"}); return "heads.task";
  }
}

// --- The embedding head (heads.embedding: Pooling, Dense modules, prompts) -------------------------

int pooling_modes(const fb::PoolingT* q) {
  return q ? int(q->cls_token) + int(q->max_tokens) + int(q->mean_tokens) +
                 int(q->mean_sqrt_len_tokens) + int(q->weightedmean_tokens) + int(q->lasttoken)
           : 0;
}

// The width of the vector entering Dense module i as the records state it: the pooled width
// (modes × hidden_size) for the first, the module before's out_features after it.
int64_t width_before(const BrtParts& p, size_t i) {
  const fb::EmbeddingHeadT& e = *p.model.heads->embedding;
  if (i > 0) return e.dense[i - 1]->out_features;
  return int64_t(pooling_modes(e.pooling.get())) * (p.model.config ? p.model.config->hidden_size : 0);
}

// The head, made (mean pooling, nothing else) when the file has none.
fb::EmbeddingHeadT& embedding_head(BrtParts& p) {
  if (!p.model.heads) p.model.heads = std::make_unique<fb::HeadsT>();
  auto& e = p.model.heads->embedding;
  if (!e) {
    e = std::make_unique<fb::EmbeddingHeadT>();
    e->pooling = std::make_unique<fb::PoolingT>();
    e->pooling->mean_tokens = true;
    e->similarity_fn_name = "cosine";
  }
  return *e;
}

// "<path>.linear.weight" [out_features, in] and, with bias, "<path>.linear.bias" [out_features]:
// f32 in new segments, replacing records of those names (in = d.in_features: the shape the
// loader expects). Shapes of more than 2^16 values or not positive get no tensor.
void set_dense_tensors(BrtParts& p, const fb::DenseModuleT& d, int64_t in, Rng& rng) {
  auto put = [&](const std::string& name, std::vector<int64_t> shape) {
    uint64_t n = 1;
    for (int64_t x : shape) {
      if (x < 1 || x > (1 << 16)) return;
      n *= uint64_t(x);
    }
    if (n > (1u << 16)) return;
    const uint64_t at = append_segment(p, random_floats(n, rng));
    if (fb::TensorT* t = find_tensor(p, name)) {
      t->shape = std::move(shape);
      t->dtype = fb::DType::f32;
      t->offset = at;
      t->size = n * 4;
      t->quantization.reset();
    } else {
      p.model.tensors.push_back(make_tensor(name, std::move(shape), fb::DType::f32, at, n * 4));
    }
  };
  put(d.path + ".linear.weight", {d.out_features, in});
  if (d.bias) put(d.path + ".linear.bias", {d.out_features});
}

void remove_dense_tensors(BrtParts& p, const std::string& path) {
  auto& v = p.model.tensors;
  v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& t) {
            return t->name == path + ".linear.weight" || t->name == path + ".linear.bias";
          }), v.end());
}

const char* const kActivations[] = {
    "torch.nn.modules.activation.Tanh", "torch.nn.modules.linear.Identity",
    "torch.nn.modules.activation.ReLU", "torch.nn.modules.activation.GELU",
    "torch.nn.modules.activation.Sigmoid"};

// A Dense module at `at` (in_features the width before it, a small out_features or a special
// one), with its tensors, with wrongly shaped ones (in_features + 1) or with none.
std::string insert_dense(BrtParts& p, Rng& rng) {
  fb::EmbeddingHeadT& e = embedding_head(p);
  const size_t at = pick(rng, e.dense.size() + 1);
  auto d = std::make_unique<fb::DenseModuleT>();
  d->path = coin(rng, 8) ? "2_Dense" : fmt::format("{}_Dense", 2 + e.dense.size() + pick(rng, 3));
  d->in_features = int32_t(width_before(p, at));
  d->out_features = coin(rng, 6) ? int32_t(special_int(rng)) : int32_t(1 + pick(rng, 16));
  d->bias = !coin(rng, 3);
  d->activation_function = kActivations[pick(rng, 5)];
  const char* tensors = "";
  switch (pick(rng, 4)) {
    case 0: tensors = ", no tensors"; break;
    case 1: set_dense_tensors(p, *d, int64_t(d->in_features) + 1, rng); tensors = ", misshaped tensors"; break;
    default: set_dense_tensors(p, *d, d->in_features, rng); break;
  }
  if (at < e.dense.size() && coin(rng))  // the next module takes the new width: a chain that holds
    e.dense[at]->in_features = d->out_features;
  const std::string what = fmt::format("dense {} [{}, {}] added at {}{}", d->path, d->out_features,
                                       d->in_features, at, tensors);
  e.dense.insert(e.dense.begin() + long(at), std::move(d));
  return what;
}

std::string edit_prompts(fb::EmbeddingHeadT& e, Rng& rng) {
  auto add = [&](std::string name, std::string text) {
    auto kv = std::make_unique<fb::KeyValueT>();
    kv->key = std::move(name);
    kv->value = std::move(text);
    e.prompts.push_back(std::move(kv));
  };
  switch (pick(rng, 7)) {
    case 0: add(one_of<std::string>(rng, {"query", "passage", "document", ""}), one_of<std::string>(rng, {"query: ", "", "passage: "})); return "prompt added";
    case 1:  // a name twice
      add(e.prompts.empty() ? "query" : e.prompts[pick(rng, e.prompts.size())]->key, "again: ");
      if (e.prompts.size() == 1) add("query", "query: ");
      return "prompt twice";
    case 2: add("query", std::string(1 + pick(rng, 1200000), 'p')); return "huge prompt";
    case 3: add(special_text(rng), special_text(rng)); return "prompt text";
    case 4: {
      for (uint64_t i = 0, n = 1 + pick(rng, 6000); i < n; ++i) add(fmt::format("p{}", i), "x");
      return "many prompts";
    }
    case 5: e.prompts.clear(); return "prompts cleared";
    default:  // one of the prompts' names, or one naming none
      e.default_prompt_name = !e.prompts.empty() && coin(rng) ? e.prompts[pick(rng, e.prompts.size())]->key
                                                             : one_of<std::string>(rng, {"query", "missing", "", "Query"});
      return "default_prompt_name";
  }
}

std::string edit_embedding(BrtParts& p, Rng& rng) {
  if (!p.model.heads || !p.model.heads->embedding || coin(rng, 8)) {
    if (p.model.heads && p.model.heads->embedding && coin(rng)) {
      p.model.heads->embedding.reset();
      return "embedding head removed";
    }
    if (p.model.heads) p.model.heads->embedding.reset();
    fb::EmbeddingHeadT& e = embedding_head(p);  // mean pooling; then maybe Dense modules, prompts
    for (uint64_t i = 0, n = pick(rng, 3); i < n; ++i) insert_dense(p, rng);
    e.normalize = coin(rng);
    if (coin(rng, 3)) edit_prompts(e, rng);
    return fmt::format("embedding head added ({} dense)", e.dense.size());
  }
  fb::EmbeddingHeadT& e = embedding_head(p);
  fb::DenseModuleT* d = e.dense.empty() ? nullptr : e.dense[pick(rng, e.dense.size())].get();
  switch (pick(rng, 10)) {
    case 0: {  // one mode toggled, every mode off, every mode on, or the (required) table gone
      if (coin(rng, 16)) {
        e.pooling.reset();
        return "pooling removed";
      }
      if (!e.pooling) e.pooling = std::make_unique<fb::PoolingT>();
      fb::PoolingT& q = *e.pooling;
      bool* modes[] = {&q.cls_token, &q.max_tokens, &q.mean_tokens, &q.mean_sqrt_len_tokens,
                       &q.weightedmean_tokens, &q.lasttoken, &q.include_prompt};
      switch (pick(rng, 4)) {
        case 0: for (bool* m : modes) *m = false; return "pooling: no mode";
        case 1: for (bool* m : modes) *m = true; return "pooling: every mode";
        default: {
          bool* m = modes[pick(rng, 7)];
          *m = !*m;
          return "pooling mode toggled";
        }
      }
    }
    case 1: {  // in_features or out_features: negative, zero, huge, off the chain by one
      if (!d) return insert_dense(p, rng);
      int32_t& f = coin(rng) ? d->in_features : d->out_features;
      const int64_t was = f;  // one off, computed without overflowing
      f = int32_t(one_of<int64_t>(rng, {-1, 0, 1 << 20, (1 << 20) + 1, std::numeric_limits<int32_t>::max(),
                                        std::numeric_limits<int32_t>::min(), was + 1, was - 1,
                                        special_int(rng)}));
      return "features of " + d->path;
    }
    case 2:
      if (!d) return insert_dense(p, rng);
      d->activation_function = coin(rng) ? one_of<std::string>(rng, {"torch.nn.modules.activation.Softmax", "Tanh", "torch.nn.Tanh", "", "torch.nn.modules.activation.Tanh "})
                                         : special_text(rng);
      return "activation of " + d->path;
    case 3: return insert_dense(p, rng);
    case 4: {  // a module gone, its tensors left in the file or gone too
      if (!d) return "dense: none";
      const size_t at = pick(rng, e.dense.size());
      const std::string path = e.dense[at]->path;
      const bool tensors = coin(rng);
      if (tensors) remove_dense_tensors(p, path);
      e.dense.erase(e.dense.begin() + long(at));
      return "dense " + path + " removed" + (tensors ? " with its tensors" : "");
    }
    case 5: {  // a path twice, empty, odd, or renamed away from its tensors
      if (!d) return insert_dense(p, rng);
      d->path = coin(rng) ? e.dense[pick(rng, e.dense.size())]->path : coin(rng) ? special_text(rng) : d->path + "x";
      return "dense path";
    }
    case 6: {
      const int32_t pos = p.model.config ? p.model.config->max_position_embeddings : 512;
      e.max_seq_length = int32_t(one_of<int64_t>(rng, {-1, 0, 1, 2, pos, int64_t(pos) + 1,
                                                       std::numeric_limits<int32_t>::max(),
                                                       std::numeric_limits<int32_t>::min(), special_int(rng)}));
      return "max_seq_length";
    }
    case 7: return edit_prompts(e, rng);
    case 8:
      e.similarity_fn_name = coin(rng) ? one_of<std::string>(rng, {"cosine", "dot", "euclidean", "manhattan", "Cosine", "dot_product", "cos_sim", ""})
                                       : special_text(rng);
      return "similarity_fn_name";
    default:  // the flags: a bias without its tensor, or a tensor without its bias
      if (d && coin(rng)) {
        d->bias = !d->bias;
        return "bias of " + d->path;
      }
      e.normalize = !e.normalize;
      e.do_lower_case = coin(rng);
      return "normalize, do_lower_case";
  }
}

void set_meta(BrtParts& p, const std::string& key, const std::string& value) {
  for (auto& kv : p.model.metadata)
    if (kv->key == key) {
      kv->value = value;
      return;
    }
  auto kv = std::make_unique<fb::KeyValueT>();
  kv->key = key;
  kv->value = value;
  p.model.metadata.push_back(std::move(kv));
}

std::string edit_metadata(BrtParts& p, Rng& rng) {
  switch (pick(rng, 6)) {
    case 0: {
      std::vector<std::string> labels = p.model.heads ? p.model.heads->labels : std::vector<std::string>{};
      set_meta(p, "task", random_task_record(rng, labels));
      return "task record";
    }
    case 1:
      set_meta(p, one_of<std::string>(rng, {"quantization", "quantization.embeddings", "quantization.observer_momentum"}),
               one_of<std::string>(rng, {"int8", "fake-quant", "float", "nan", "", "1e40", "x"}));
      return "quantization metadata";
    case 2: set_meta(p, "big", std::string(1 + pick(rng, 1200000), 'v')); return "big value";
    case 3: {
      auto kv = std::make_unique<fb::KeyValueT>();
      kv->key = p.model.metadata.empty() ? "k" : p.model.metadata[0]->key;  // a key twice
      kv->value = special_text(rng);
      p.model.metadata.push_back(std::move(kv));
      return "metadata key twice";
    }
    case 4: {
      const std::string v(200 + pick(rng, 5000), 'm');
      for (uint64_t i = 0, n = 1 + pick(rng, 6000); i < n; ++i) set_meta(p, fmt::format("k{}", i), v);
      return "many metadata values";
    }
    default: set_meta(p, special_text(rng), special_text(rng)); return "metadata text";
  }
}

std::string edit_config(BrtParts& p, Rng& rng) {
  if (!p.model.config) return "config: none";
  fb::ConfigT& c = *p.model.config;
  int32_t* ints[] = {&c.vocab_size, &c.hidden_size, &c.num_hidden_layers, &c.num_attention_heads,
                     &c.intermediate_size, &c.max_position_embeddings, &c.type_vocab_size,
                     &c.pad_token_id};
  float* floats[] = {&c.layer_norm_eps, &c.initializer_range, &c.hidden_dropout_prob,
                     &c.attention_probs_dropout_prob};
  if (coin(rng, 6)) {
    c.hidden_act = one_of<std::string>(rng, {"gelu", "gelu_new", "relu", "", "gelu_pytorch_tanh"});
    return "hidden_act";
  }
  if (coin(rng)) {
    *ints[pick(rng, 8)] = int32_t(special_int(rng));
    return "config int";
  }
  *floats[pick(rng, 4)] = special_float(rng);
  return "config float";
}

std::string edit_training_state(BrtParts& p, Rng& rng) {
  if (!p.model.training_state || coin(rng, 4)) {
    if (p.model.training_state && coin(rng)) {
      p.model.training_state.reset();
      return "training state removed";
    }
    p.model.training_state = std::make_unique<fb::TrainingStateT>();
    auto& s = *p.model.training_state;
    s.step = 3;
    s.optimizer = "adamw";
    for (const auto& t : p.model.tensors) {
      if (s.optimizer_tensors.size() >= 8) break;
      auto m = std::make_unique<fb::TensorT>(*t);
      m->name = "exp_avg." + t->name;
      if (coin(rng)) {  // its own copy of the bytes, else an alias of the weight's
        const std::string bytes = t->offset < p.data.size() && t->size <= p.data.size() - t->offset
                                      ? p.data.substr(t->offset, t->size) : std::string();
        m->offset = append_segment(p, bytes);
        m->size = bytes.size();
      }
      s.optimizer_tensors.push_back(std::move(m));
    }
    return "training state added";
  }
  auto& s = *p.model.training_state;
  switch (pick(rng, 4)) {
    case 0: s.step = special_int(rng); return "step";
    case 1: {
      auto kv = std::make_unique<fb::KeyNumberT>();
      kv->key = "lr";
      kv->value = one_of<double>(rng, {std::nan(""), 1e-3, -1.0, HUGE_VAL});
      s.hyper.push_back(std::move(kv));
      return "hyper";
    }
    case 2: s.rng_state.assign(pick(rng, 100000), 7); return "rng_state";
    default: return duplicate_records(p, rng);
  }
}

std::string edit_bytes(BrtParts& p, Rng& rng) {
  if (p.data.size() < 4) return "bytes: no data";
  const size_t at = pick(rng, p.data.size() / 4) * 4;
  uint32_t v;
  switch (pick(rng, 5)) {
    case 0: v = 0x7fc00000u; break;  // f32 NaN
    case 1: v = 0xff800000u; break;  // f32 -inf
    case 2: v = 0x7c007c00u; break;  // two f16 infinities
    case 3: v = 0x7f807f80u; break;  // two bf16 infinities
    default: v = uint32_t(rng()); break;
  }
  std::memcpy(p.data.data() + at, &v, 4);
  return fmt::format("bytes at {}", at);
}

std::string edit_checksums(BrtParts& p, PackOptions& o, Rng& rng) {
  switch (pick(rng, 4)) {
    case 0:  // every checksum left out
      for (auto& t : p.model.tensors) t->crc32c = flatbuffers::nullopt;
      if (p.model.training_state)
        for (auto& t : p.model.training_state->optimizer_tensors) t->crc32c = flatbuffers::nullopt;
      p.model.buffer_crc32c = flatbuffers::nullopt;
      return "checksums left out";
    case 1: if (fb::TensorT* t = any_tensor(p, rng)) t->crc32c = flatbuffers::nullopt; return "one checksum left out";
    case 2: p.model.buffer_crc32c = flatbuffers::nullopt; return "header checksum left out";
    default: o.checksums = false; return "checksums not recomputed";
  }
}

std::string edit_records(BrtParts& p, Rng& rng) {
  auto& v = p.model.tensors;
  if (v.empty()) return "records: none";
  switch (pick(rng, 4)) {
    case 0: v.erase(v.begin() + long(pick(rng, v.size()))); return "tensor removed";
    case 1: {
      auto& a = v[pick(rng, v.size())];
      auto& b = v[pick(rng, v.size())];
      std::swap(a->name, b->name);
      return "names swapped";
    }
    case 2: v[pick(rng, v.size())]->name = special_text(rng); return "tensor name";
    default: {  // a new segment of random floats
      const fb::EmbeddingHeadT* e = p.model.heads ? p.model.heads->embedding.get() : nullptr;
      if (e && !e->dense.empty() && coin(rng)) {  // a Dense module's, shaped as its record says
        const fb::DenseModuleT& d = *e->dense[pick(rng, e->dense.size())];
        set_dense_tensors(p, d, d.in_features, rng);
        return "tensors of " + d.path;
      }
      const uint64_t n = 1 + pick(rng, 4096);
      const uint64_t at = append_segment(p, random_floats(n, rng));
      v.push_back(make_tensor(one_of<std::string>(rng, {"qa_outputs.weight", "qa_outputs.bias", "classifier.weight", "classifier.bias", "2_Dense.linear.weight", "2_Dense.linear.bias", "extra"}),
                              {int64_t(n)}, fb::DType::f32, at, n * 4));
      return "tensor added";
    }
  }
}

}  // namespace

std::string random_task_record(Rng& rng, const std::vector<std::string>& labels) {
  const std::string name = one_of<std::string>(rng, {"sst2", "squad", "tsv", "conll2003", "stsb", "mrpc", "unknown"});
  nlohmann::json j{{"name", name},
                   {"head", one_of<std::string>(rng, {"sequence_classification", "regression", "token_classification", "question_answering", "none", "bogus"})},
                   {"labels", coin(rng) ? labels : std::vector<std::string>{"0", "1", "2"}},
                   {"pair", coin(rng)},
                   {"max_seq_length", coin(rng) ? 128 : special_int(rng)}};
  if (name == "tsv" || coin(rng, 4))
    j["tsv"] = {{"text_column", coin(rng) ? "sentence" : special_text(rng)}, {"text_pair_column", ""},
                {"label_column", "label"}, {"labels", coin(rng) ? labels : std::vector<std::string>{"a\tb", "c"}},
                {"regression", coin(rng, 3)}, {"has_header", coin(rng)}};
  if (name == "squad" || coin(rng, 4))
    j["squad"] = {{"doc_stride", coin(rng) ? 128 : special_int(rng)}, {"max_query_length", coin(rng) ? 64 : special_int(rng)},
                  {"n_best", coin(rng) ? 20 : special_int(rng)}, {"max_answer_length", coin(rng) ? 30 : special_int(rng)}};
  if (coin(rng, 8)) j.erase(one_of<std::string>(rng, {"name", "head", "labels", "pair", "max_seq_length"}));
  // Labels may hold any bytes (special_text): invalid UTF-8 is written replaced, not thrown on.
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return coin(rng, 10) ? text.substr(0, pick(rng, 40)) : text;
}

std::string mutate(BrtParts& p, PackOptions& o, Rng& rng) {
  std::string what;
  for (uint64_t k = 0, n = 1 + pick(rng, 3); k < n; ++k) {
    if (!what.empty()) what += "; ";
    switch (pick(rng, 17)) {
      case 0: what += edit_offset(p, rng); break;
      case 1: what += edit_size(p, rng); break;
      case 2: what += edit_shape(p, rng); break;
      case 3: what += edit_dtype(p, rng); break;
      case 4: what += duplicate_records(p, rng); break;
      case 5: what += edit_quantization(p, rng); break;
      case 6: what += edit_vocab(p, rng); break;
      case 7: o.share_strings = !o.share_strings; what += "shared strings"; break;
      case 8: what += edit_heads(p, rng); break;
      case 9: what += edit_metadata(p, rng); break;
      case 10: what += edit_config(p, rng); break;
      case 11: what += edit_training_state(p, rng); break;
      case 12: what += edit_bytes(p, rng); break;
      case 13: what += coin(rng, 4) ? edit_checksums(p, o, rng) : edit_records(p, rng); break;
      case 14:
      case 15: what += edit_embedding(p, rng); break;
      default: p.model.format_version = uint32_t(coin(rng) ? 1 : special_int(rng)); what += "format_version"; break;
    }
  }
  return what;
}

}  // namespace bertrt::hostile
