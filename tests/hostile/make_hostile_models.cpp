// make_hostile_models: hostile .brt files that pass the FlatBuffers verifier and carry correct
// (recomputed) checksums, made from an honest tiny model, an SST-2 fine-tuned one and its int8
// export. Each is an attack a downloaded or shared model file could carry: aliased segments,
// counts and shared strings that decode to gigabytes, quadratic duplicate checks, non-finite
// weights, broken quantization records, out-of-range config floats, forged labels, task records
// that answer wrongly, files without checksums, embedding heads that contradict themselves or
// their tensors. Writes DIR/<name>.brt and DIR/manifest.tsv, one line a file: name, the commands
// that must refuse it (info, predict), and an extended regular expression the error must match
// (besides the file's path). tests/e2e/hostile_model_test.sh runs them.
//
// Usage: make_hostile_models TINY.brt SST2.brt INT8.brt DIR
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "brt_edit.h"
#include "core/half.h"

namespace {

using namespace bertrt;
using namespace bertrt::hostile;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Generator {
  std::string dir;
  std::ofstream manifest;
  int count = 0;

  void emit(const std::string& name, const std::string& commands, const std::string& pattern,
            const BrtParts& p, const PackOptions& o = {}) {
    const std::string bytes = put_together(p, o);
    std::ofstream out(dir + "/" + name + ".brt", std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + name);
    manifest << name << '\t' << commands << '\t' << pattern << '\n';
    ++count;
  }
};

BrtParts parts_of(const std::string& path) {
  auto p = take_apart(read_file(path));
  if (!p) throw std::runtime_error(path + ": not a .brt file");
  return std::move(*p);
}

void set_f32(BrtParts& p, const fb::TensorT& t, size_t i, float v) {
  std::memcpy(p.data.data() + t.offset + 4 * i, &v, 4);
}

fb::TensorT& tensor(BrtParts& p, const std::string& name) {
  fb::TensorT* t = find_tensor(p, name);
  if (!t) throw std::runtime_error("no tensor " + name);
  return *t;
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

// A new key (no search: the files below add tens of thousands).
void push_meta(BrtParts& p, const std::string& key, const std::string& value) {
  auto kv = std::make_unique<fb::KeyValueT>();
  kv->key = key;
  kv->value = value;
  p.model.metadata.push_back(std::move(kv));
}

std::string meta(const BrtParts& p, const std::string& key) {
  for (const auto& kv : p.model.metadata)
    if (kv->key == key) return kv->value;
  throw std::runtime_error("no metadata " + key);
}

// A classifier for `n` labels ([n, H] and [n]) in new segments, replacing the file's.
void resize_classifier(BrtParts& p, int n) {
  const int H = p.model.config->hidden_size;
  std::string w(size_t(n) * H * 4, '\0'), b(size_t(n) * 4, '\0');
  for (size_t i = 0; i < size_t(n) * H; ++i) {
    const float v = 0.01f * float(int(i % 7) - 3);
    std::memcpy(w.data() + 4 * i, &v, 4);
  }
  fb::TensorT& cw = tensor(p, "classifier.weight");
  cw.offset = append_segment(p, w);
  cw.size = w.size();
  cw.shape = {n, H};
  fb::TensorT& cb = tensor(p, "classifier.bias");
  cb.offset = append_segment(p, b);
  cb.size = b.size();
  cb.shape = {n};
}

// The SST-2 model with labels `labels` everywhere (head, classifier, task record).
BrtParts with_labels(const BrtParts& sst2, const std::vector<std::string>& labels) {
  BrtParts p{sst2.model, sst2.data};
  p.model.heads->labels = labels;
  resize_classifier(p, int(labels.size()));
  nlohmann::json task = nlohmann::json::parse(meta(p, "task"));
  task["labels"] = labels;
  set_meta(p, "task", task.dump());
  compact(p);
  return p;
}

// A span (SQuAD) model made from the tiny one: qa_outputs [2, H] + [2], its task record.
BrtParts squad_model(const BrtParts& tiny, const nlohmann::json& squad) {
  BrtParts p{tiny.model, tiny.data};
  const int H = p.model.config->hidden_size;
  const std::string w(size_t(2) * H * 4, '\0'), b(8, '\0');
  p.model.tensors.push_back(make_tensor("qa_outputs.weight", {2, H}, fb::DType::f32, append_segment(p, w), w.size()));
  p.model.tensors.push_back(make_tensor("qa_outputs.bias", {2}, fb::DType::f32, append_segment(p, b), b.size()));
  if (!p.model.heads) p.model.heads = std::make_unique<fb::HeadsT>();
  p.model.heads->mlm = p.model.heads->nsp = false;
  p.model.heads->kind = fb::HeadKind::question_answering;
  p.model.heads->task = "squad";
  p.model.heads->labels.clear();
  nlohmann::json task{{"name", "squad"}, {"head", "question_answering"}, {"labels", nlohmann::json::array()},
                      {"pair", false}, {"max_seq_length", 128}, {"squad", squad}};
  set_meta(p, "task", task.dump());
  return p;
}

// A sentence-embedding model made from the tiny one: mean pooling, then Dense 2_Dense [H → out]
// (Tanh, bias) with its f32 tensors when `tensors`, a prompt "query".
BrtParts embedding_model(const BrtParts& tiny, int out, bool tensors) {
  BrtParts p{tiny.model, tiny.data};
  const int H = p.model.config->hidden_size;
  if (!p.model.heads) p.model.heads = std::make_unique<fb::HeadsT>();
  auto e = std::make_unique<fb::EmbeddingHeadT>();
  e->pooling = std::make_unique<fb::PoolingT>();
  e->pooling->mean_tokens = true;
  auto d = std::make_unique<fb::DenseModuleT>();
  d->path = "2_Dense";
  d->in_features = H;
  d->out_features = out;
  d->activation_function = "torch.nn.modules.activation.Tanh";
  e->dense.push_back(std::move(d));
  auto kv = std::make_unique<fb::KeyValueT>();
  kv->key = "query";
  kv->value = "query: ";
  e->prompts.push_back(std::move(kv));
  e->similarity_fn_name = "cosine";
  p.model.heads->embedding = std::move(e);
  if (tensors) {
    const std::string w(size_t(out) * H * 4, '\0'), b(size_t(out) * 4, '\0');
    p.model.tensors.push_back(make_tensor("2_Dense.linear.weight", {out, H}, fb::DType::f32, append_segment(p, w), w.size()));
    p.model.tensors.push_back(make_tensor("2_Dense.linear.bias", {out}, fb::DType::f32, append_segment(p, b), b.size()));
  }
  return p;
}

void strip_checksums(BrtParts& p) {
  for (auto& t : p.model.tensors) t->crc32c = flatbuffers::nullopt;
  if (p.model.training_state)
    for (auto& t : p.model.training_state->optimizer_tensors) t->crc32c = flatbuffers::nullopt;
  p.model.buffer_crc32c = flatbuffers::nullopt;
}

void add_training_state(BrtParts& p, bool own_bytes) {
  p.model.training_state = std::make_unique<fb::TrainingStateT>();
  auto& s = *p.model.training_state;
  s.step = 10;
  s.optimizer = "adamw";
  for (const auto& t : p.model.tensors) {
    if (t->dtype != fb::DType::f32) continue;
    auto m = std::make_unique<fb::TensorT>(*t);
    m->name = "exp_avg." + t->name;
    if (own_bytes) m->offset = append_segment(p, p.data.substr(t->offset, t->size));
    s.optimizer_tensors.push_back(std::move(m));
  }
}

void generate(Generator& g, const BrtParts& tiny, const BrtParts& sst2, const BrtParts& int8) {
  const std::string both = "info,predict";
  const std::string word = "bert.embeddings.word_embeddings.weight";
  auto copy = [](const BrtParts& p) { return BrtParts{p.model, p.data}; };

  // --- cost: what hung every command or blew up its memory --------------------------------------
  {  // 200,000 labels (the duplicate check was quadratic): over the count limit
    BrtParts p = copy(sst2);
    for (int i = 0; i < 200000; ++i) p.model.heads->labels.push_back(fmt::format("L{}", i));
    g.emit("labels_200k", both, "heads.labels: 200002 entries, more than the 100000 allowed", p);
  }
  {  // 100,000 distinct labels: within the limit, hashed, refuted by the classifier's shape
    BrtParts p = copy(sst2);
    p.model.heads->labels.clear();
    for (int i = 0; i < 100000; ++i) p.model.heads->labels.push_back(fmt::format("L{}", i));
    g.emit("labels_100k", "predict", "tensor 'classifier.weight' has shape \\[2, 128\\], expected \\[100000, 128\\]", p);
  }
  {  // 100,000 labels, the last two equal: found by hashing, not by 5e9 comparisons
    BrtParts p = copy(sst2);
    p.model.heads->labels.clear();
    for (int i = 0; i < 99999; ++i) p.model.heads->labels.push_back(fmt::format("L{}", i));
    p.model.heads->labels.push_back("L5");
    g.emit("labels_100k_duplicate", both, "heads: label 'L5' appears twice", p);
  }
  {  // 20,000 records of the word-embedding segment (each was checksummed again: 312 GB)
    BrtParts p = copy(tiny);
    const fb::TensorT w = tensor(p, word);
    for (int i = 0; i < 20000; ++i) {
      auto t = std::make_unique<fb::TensorT>(w);
      t->name = fmt::format("alias.{}", i);
      p.model.tensors.push_back(std::move(t));
    }
    g.emit("alias_20k_records", both, "segment .* overlaps tensor '", p);
  }
  {  // the same with one name 20,000 times
    BrtParts p = copy(tiny);
    const fb::TensorT w = tensor(p, word);
    for (int i = 0; i < 20000; ++i) p.model.tensors.push_back(std::make_unique<fb::TensorT>(w));
    g.emit("alias_20k_same_name", both, "overlaps tensor '" + word + "'", p);
  }
  {  // the trick on the optimizer moments, which predict read and checked too
    BrtParts p = copy(sst2);
    add_training_state(p, false);
    const fb::TensorT w = tensor(p, word);
    for (int i = 0; i < 20000; ++i) {
      auto t = std::make_unique<fb::TensorT>(w);
      t->name = fmt::format("exp_avg_sq.alias.{}", i);
      p.model.training_state->optimizer_tensors.push_back(std::move(t));
    }
    g.emit("optimizer_alias_20k", both, "optimizer tensor '.*' overlaps|overlaps optimizer tensor", p);
  }
  {  // a 40-layer H1024 model whose 645 tensors alias one 16 MB segment (ran at 2.0 GB)
    BrtParts p = copy(tiny);
    fb::ConfigT& c = *p.model.config;
    c.num_hidden_layers = 40, c.hidden_size = 1024, c.num_attention_heads = 16, c.intermediate_size = 4096;
    const int64_t H = 1024, I = 4096, V = c.vocab_size, P = c.max_position_embeddings;
    p.data.clear();
    const uint64_t seg = append_segment(p, std::string(size_t(I * H * 4), '\0'));
    p.model.tensors.clear();
    auto add = [&](const std::string& name, std::vector<int64_t> shape) {
      uint64_t n = 4;
      for (int64_t d : shape) n *= uint64_t(d);
      p.model.tensors.push_back(make_tensor(name, std::move(shape), fb::DType::f32, seg, n));
    };
    add(word, {V, H});
    add("bert.embeddings.position_embeddings.weight", {P, H});
    add("bert.embeddings.token_type_embeddings.weight", {2, H});
    add("bert.embeddings.LayerNorm.weight", {H});
    add("bert.embeddings.LayerNorm.bias", {H});
    for (int l = 0; l < 40; ++l) {
      const std::string q = fmt::format("bert.encoder.layer.{}.", l);
      for (const char* lin : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
        add(q + lin + ".weight", {H, H});
        add(q + lin + ".bias", {H});
      }
      add(q + "attention.output.LayerNorm.weight", {H});
      add(q + "attention.output.LayerNorm.bias", {H});
      add(q + "intermediate.dense.weight", {I, H});
      add(q + "intermediate.dense.bias", {I});
      add(q + "output.dense.weight", {H, I});
      add(q + "output.dense.bias", {H});
      add(q + "output.LayerNorm.weight", {H});
      add(q + "output.LayerNorm.bias", {H});
    }
    add("bert.pooler.dense.weight", {H, H});
    add("bert.pooler.dense.bias", {H});
    p.model.heads = std::make_unique<fb::HeadsT>();
    g.emit("alias_40_layers_h1024", both, "segment .* overlaps tensor '", p);
  }
  {  // 40,000 vocabulary entries pointing at one string (of 64 KB, the issue's file decoded to
     // 2.6 GB; 2 KB here, over the per-token limit all the same)
    BrtParts p = copy(tiny);
    p.model.config->vocab_size = 40000;
    p.model.tokenizer->vocab.assign(40000, std::string(2000, 't'));
    PackOptions o;
    o.share_strings = true;
    g.emit("vocab_shared_long_string", both, "tokenizer.vocab\\[0\\]: 2000 bytes, longer than the 1024-byte limit", p, o);
  }
  {  // the same with a 1000-byte string: every entry within the limit, the sum not
    BrtParts p = copy(tiny);
    p.model.config->vocab_size = 40000;
    p.model.tokenizer->vocab.assign(40000, std::string(1000, 't'));
    PackOptions o;
    o.share_strings = true;
    g.emit("vocab_shared_1k_string", both, "tokenizer.vocab: the header decodes to more than 8 times its", p, o);
  }
  {  // 40,000 metadata values pointing at one string (the issue's decoded to 3.8 GB)
    BrtParts p = copy(tiny);
    for (int i = 0; i < 40000; ++i) push_meta(p, fmt::format("k{}", i), std::string(1000, 'm'));
    PackOptions o;
    o.share_strings = true;
    g.emit("metadata_shared_40k", both, "metadata: 40002 entries, more than the 4096 allowed|metadata: [0-9]+ entries, more than the 4096 allowed", p, o);
  }
  {  // 4,000 values (within the count) of one shared 20 KB string: the decoding budget
    BrtParts p = copy(tiny);
    for (int i = 0; i < 4000; ++i) push_meta(p, fmt::format("k{}", i), std::string(20000, 'm'));
    PackOptions o;
    o.share_strings = true;
    g.emit("metadata_shared_4k", both, "the header decodes to more than 8 times its", p, o);
  }
  {  // one metadata value of 8 MB (the issue's was 200 MB: the same rule)
    BrtParts p = copy(tiny);
    set_meta(p, "notes", std::string(8 << 20, 'n'));
    g.emit("metadata_8mb_value", both, "metadata 'notes': 8388608 bytes, longer than the 1048576-byte limit", p);
  }
  {  // 40,000 vocabulary entries against vocab_size 30: refused before the vocab is decoded
    BrtParts p = copy(tiny);
    for (int i = 0; i < 40000; ++i) p.model.tokenizer->vocab.push_back(fmt::format("w{}", i));
    g.emit("vocab_over_vocab_size", both, "tokenizer vocab has [0-9]+ tokens but config.vocab_size is only", p);
  }
  {  // 20,000 tensors with one name (no aliasing): the hashed duplicate check
    BrtParts p = copy(tiny);
    for (int i = 0; i < 20000; ++i) {
      const uint64_t at = append_segment(p, std::string(4, '\0'));
      p.model.tensors.push_back(make_tensor("dup", {1}, fb::DType::f32, at, 4));
    }
    g.emit("duplicate_names_20k", both, "tensor 'dup' appears twice", p);
  }
  {  // a segment past the end of the file
    BrtParts p = copy(tiny);
    tensor(p, word).offset = (p.data.size() + 63) / 64 * 64 + 64;
    g.emit("segment_past_end", both, "runs past the end of the file", p);
  }
  {  // a segment inside the FlatBuffer
    BrtParts p = copy(tiny);
    tensor(p, word).offset = uint64_t(0) - 64;
    g.emit("segment_in_header", both, "lies inside the FlatBuffer", p);
  }
  {  // data hidden after the last segment, outside every checksum (a polyglot file)
    BrtParts p = copy(tiny);
    p.data += std::string(4096, 'X');
    g.emit("trailing_data", both, "belong to no tensor", p);
  }
  {  // a shape of nine dimensions
    BrtParts p = copy(tiny);
    fb::TensorT& t = tensor(p, "bert.embeddings.LayerNorm.bias");
    t.shape.insert(t.shape.begin(), 8, 1);
    g.emit("rank_9", both, "9 dimensions, more than 8", p);
  }

  // --- values: what loaded and answered wrongly with exit 0 --------------------------------------
  {
    BrtParts p = copy(sst2);
    set_f32(p, tensor(p, "classifier.weight"), 5, std::numeric_limits<float>::quiet_NaN());
    g.emit("nan_classifier", both, "tensor 'classifier.weight': element 5 is not finite", p);
  }
  {
    BrtParts p = copy(sst2);
    set_f32(p, tensor(p, "bert.encoder.layer.0.output.LayerNorm.weight"), 0, std::numeric_limits<float>::infinity());
    g.emit("inf_layernorm", both, "tensor 'bert.encoder.layer.0.output.LayerNorm.weight': element 0 is not finite", p);
  }
  {  // finite weights that overflow together: a classifier row of 3e38 gave 0=-nan 1=-nan, exit 0
    BrtParts p = copy(sst2);
    fb::TensorT& w = tensor(p, "classifier.weight");
    for (int i = 0; i < p.model.config->hidden_size; ++i) set_f32(p, w, size_t(i), 3e38f);
    g.emit("classifier_overflow", "info-ok,predict", "the model's logits are not finite \\(element [0-9]+ is -?(inf|nan)\\): its weights overflow float32", p);
  }
  {  // one embedding row: only the inputs with that token would see it
    BrtParts p = copy(sst2);
    const int H = p.model.config->hidden_size;
    fb::TensorT& w = tensor(p, word);
    for (int i = 0; i < H; ++i) set_f32(p, w, size_t(7 * H + i), std::numeric_limits<float>::quiet_NaN());
    g.emit("nan_embedding_row", both, "tensor '" + word + "': element " + std::to_string(7 * H) + " is not finite", p);
  }
  {  // f16 values: one infinity
    BrtParts p = copy(sst2);
    fb::TensorT& b = tensor(p, "classifier.bias");
    std::string half(4, '\0');
    const uint16_t h[2] = {f32_to_f16(0.5f), 0x7c00};
    std::memcpy(half.data(), h, 4);
    b.dtype = fb::DType::f16;
    b.offset = append_segment(p, half);
    b.size = 4;
    compact(p);
    g.emit("f16_infinity", both, "tensor 'classifier.bias': element 1 is not finite \\(f16", p);
  }
  {  // bf16 NaN
    BrtParts p = copy(sst2);
    fb::TensorT& b = tensor(p, "classifier.bias");
    std::string half(4, '\0');
    const uint16_t h[2] = {0x7fc1, f32_to_bf16(0.5f)};
    std::memcpy(half.data(), h, 4);
    b.dtype = fb::DType::bf16;
    b.offset = append_segment(p, half);
    b.size = 4;
    compact(p);
    g.emit("bf16_nan", both, "tensor 'classifier.bias': element 0 is not finite \\(bf16", p);
  }
  {  // f32 bytes tagged f16 (the shape halved to keep the size): halves of floats, some NaN
    BrtParts p = copy(sst2);
    fb::TensorT& w = tensor(p, "classifier.weight");
    set_f32(p, w, 0, f32_from_bits(0x7e007e00u));  // both halves NaN as f16
    w.dtype = fb::DType::f16;
    w.shape = {w.shape[0] * 2, w.shape[1]};
    g.emit("f32_tagged_f16", both, "tensor 'classifier.weight': element 0 is not finite \\(f16", p);
  }
  const std::string q_weight = "bert.encoder.layer.0.attention.self.query.weight";
  for (const auto& [name, scale] : std::vector<std::pair<std::string, float>>{
           {"int8_scale_nan", std::numeric_limits<float>::quiet_NaN()},
           {"int8_scale_inf", std::numeric_limits<float>::infinity()},
           {"int8_scale_3e38", 3e38f},
           {"int8_scale_zero", 0.0f},
           {"int8_scale_negative", -0.01f}}) {
    BrtParts p = copy(int8);
    tensor(p, q_weight).quantization->scales[3] = scale;
    g.emit(name, both, "tensor '" + q_weight + "': quantization scale 3 is .*: scales must be finite, positive and at most", p);
  }
  {
    BrtParts p = copy(int8);
    tensor(p, q_weight).quantization->zero_points = {std::numeric_limits<int64_t>::min()};
    g.emit("int8_zero_point_int64_min", both, "zero point 0 is -9223372036854775808, outside the i8 range \\[-128, 127\\]", p);
  }
  {  // an activation range float cannot subtract: its uint8 scale is infinite
    BrtParts p = copy(int8);
    fb::TensorT& r = tensor(p, "bert.encoder.layer.0.attention.self.query.input_observer");
    set_f32(p, r, 0, -3e38f);
    set_f32(p, r, 1, 3e38f);
    g.emit("observer_range_overflow", "predict", "input_observer': activation range .* gives uint8 scale inf", p);
  }
  {  // a quantization record on a float tensor
    BrtParts p = copy(sst2);
    fb::TensorT& b = tensor(p, "classifier.bias");
    b.quantization = std::make_unique<fb::QuantizationT>();
    b.quantization->scales = {1.0f};
    g.emit("quantization_on_f32", both, "a quantization record on a f32 tensor", p);
  }
  for (const auto& [name, eps] : std::vector<std::pair<std::string, float>>{
           {"layer_norm_eps_inf", std::numeric_limits<float>::infinity()},
           {"layer_norm_eps_1e30", 1e30f},
           {"layer_norm_eps_nan", std::numeric_limits<float>::quiet_NaN()},
           {"layer_norm_eps_zero", 0.0f}}) {
    BrtParts p = copy(sst2);
    p.model.config->layer_norm_eps = eps;
    g.emit(name, both, "config: layer_norm_eps .* is outside \\(0, 0.1\\]", p);
  }
  {
    BrtParts p = copy(sst2);
    p.model.config->hidden_dropout_prob = 1.5f;
    g.emit("dropout_1.5", both, "config: hidden_dropout_prob 1.5 is outside \\[0, 1\\)", p);
  }
  {
    BrtParts p = copy(sst2);
    p.model.tokenizer->max_input_chars_per_word = -1;
    g.emit("max_input_chars_negative", both, "max_input_chars_per_word -1 is outside", p);
  }
  {  // a vocabulary token with a line break
    BrtParts p = copy(sst2);
    p.model.tokenizer->vocab[10] = "a\nforged";
    g.emit("vocab_line_break", both, "tokenizer.vocab\\[10\\]: a token holds a line break", p);
  }

  // --- labels and task records ------------------------------------------------------------------
  {  // SST-2 with 3 labels everywhere: it predicted a label SST-2 does not have
    BrtParts p = with_labels(sst2, {"0", "1", "2"});
    g.emit("sst2_three_labels", both, "metadata 'task' .*: its head kind, labels or pair flag are not task sst2's", p);
  }
  {  // a label with a tab and a line break forged output lines
    BrtParts p = copy(sst2);
    p.model.heads->labels[1] = "1\t0.99\n0";
    g.emit("label_tab_newline", both, "heads: label 1 holds a control character at byte 1", p);
  }
  {  // an escape sequence in a label of a consistent generic TSV record
    BrtParts p = copy(sst2);
    p.model.heads->labels[0] = "\x1b[2Jneg";
    g.emit("label_escape", both, "heads: label 0 holds a control character at byte 0", p);
  }
  {  // a record whose labels differ from the head's
    BrtParts p = copy(sst2);
    nlohmann::json task = nlohmann::json::parse(meta(p, "task"));
    task["labels"] = {"neg", "pos"};
    set_meta(p, "task", task.dump());
    g.emit("task_labels_differ", both, "its head kind, labels or pair flag are not task sst2's", p);
  }
  {
    BrtParts p = copy(sst2);
    nlohmann::json task = nlohmann::json::parse(meta(p, "task"));
    task["max_seq_length"] = 100000;
    set_meta(p, "task", task.dump());
    g.emit("task_max_seq_length", both, "its max_seq_length 100000 is outside \\[3, max_position_embeddings", p);
  }
  {
    BrtParts p = copy(sst2);
    nlohmann::json task = nlohmann::json::parse(meta(p, "task"));
    task["name"] = "unknown";
    set_meta(p, "task", task.dump());
    g.emit("task_unknown", both, "'unknown' is not a task bertrt knows", p);
  }
  {  // an unknown name with a line break: the error names the rule, not the forged line
    BrtParts p = copy(sst2);
    nlohmann::json task = nlohmann::json::parse(meta(p, "task"));
    task["name"] = "x\nbertrt: forged";
    set_meta(p, "task", task.dump());
    g.emit("task_name_line_break", both, "its task name holds a control character at byte 1", p);
  }
  for (const auto& [field, flag] : std::vector<std::pair<std::string, std::string>>{
           {"n_best", "n-best"}, {"max_answer_length", "max-answer-length"},
           {"doc_stride", "doc-stride"}, {"max_query_length", "max-query-length"}}) {
    nlohmann::json squad{{"doc_stride", 32}, {"max_query_length", 16}, {"n_best", 20}, {"max_answer_length", 30}};
    squad[field] = -1;
    g.emit("squad_" + field + "_negative", both, "its squad " + field + " -1 must be ≥ 1 \\(as --" + flag + " is\\)", squad_model(tiny, squad));
  }
  {  // the honest squad model this builds on loads (a control for the four above)
    nlohmann::json squad{{"doc_stride", 32}, {"max_query_length", 16}, {"n_best", 20}, {"max_answer_length", 30}};
    g.emit("squad_control", "info-ok", "", squad_model(tiny, squad));
  }

  // --- the embedding head (heads.embedding) -----------------------------------------------------
  {  // a Dense of 2^20 outputs, then one of 2^20 × 2^20 (4 TB of f32), without tensors: refused
     // by the tensor check before the model allocates
    BrtParts p = embedding_model(tiny, 1 << 20, false);
    auto d = std::make_unique<fb::DenseModuleT>(*p.model.heads->embedding->dense[0]);
    d->path = "3_Dense";
    d->in_features = 1 << 20;
    p.model.heads->embedding->dense.push_back(std::move(d));
    g.emit("embedding_dense_1m_no_tensor", "predict", "tensor '2_Dense.linear.weight' is missing", p);
  }
  {
    BrtParts p = embedding_model(tiny, 8, true);
    p.model.heads->embedding->dense[0]->in_features = 127;
    g.emit("embedding_dense_in_features", both, "embedding head: 2_Dense in_features is 127, but the vector before it has 128 dimensions", p);
  }
  {  // modes × hidden_size overflowed an int
    BrtParts p = embedding_model(tiny, 8, true);
    p.model.config->hidden_size = 1 << 30;
    p.model.heads->embedding->pooling->cls_token = true;
    g.emit("embedding_pooled_width_2g", both, "embedding head: the pooled vector has 2147483648 dimensions", p);
  }
  {
    BrtParts p = embedding_model(tiny, 8, true);
    auto kv = std::make_unique<fb::KeyValueT>(*p.model.heads->embedding->prompts[0]);
    p.model.heads->embedding->prompts.push_back(std::move(kv));
    g.emit("embedding_prompt_twice", both, "embedding head: prompt 'query' appears twice", p);
  }
  {
    BrtParts p = embedding_model(tiny, 8, true);
    p.model.heads->embedding->default_prompt_name = "passage";
    g.emit("embedding_default_prompt_missing", both, "embedding head: default_prompt_name 'passage' is not one of the prompts", p);
  }
  g.emit("embedding_control", "info-ok", "", embedding_model(tiny, 8, true));

  // --- checksums --------------------------------------------------------------------------------
  {  // left out, with the vocabulary swapped: loaded without a word
    BrtParts p = copy(sst2);
    std::swap(p.model.tokenizer->vocab[20], p.model.tokenizer->vocab[21]);
    strip_checksums(p);
    g.emit("no_checksums_vocab_swapped", both, "carries no checksum, and checksums are required .*re-save it with `bertrt-convert --no-verify-checksums", p);
  }
  {  // left out, with NaN weights: refused unchecked too (the values are checked either way)
    BrtParts p = copy(sst2);
    set_f32(p, tensor(p, "classifier.weight"), 0, std::numeric_limits<float>::quiet_NaN());
    strip_checksums(p);
    g.emit("no_checksums_nan", both, "carries no checksum", p);
    g.emit("no_checksums_nan_unchecked", "info-unchecked,predict-unchecked", "tensor 'classifier.weight': element 0 is not finite", p);
  }
  {  // only the header's left out
    BrtParts p = copy(sst2);
    p.model.buffer_crc32c = flatbuffers::nullopt;
    g.emit("no_header_checksum", both, "the model's header carries no checksum", p);
  }
  {  // one tensor's left out
    BrtParts p = copy(sst2);
    tensor(p, "classifier.bias").crc32c = flatbuffers::nullopt;
    g.emit("one_checksum_missing", both, "tensor 'classifier.bias' carries no checksum", p);
  }

  // --- the training state: read only by commands that resume a run ------------------------------
  {  // NaN moments: info (which reads the state) refuses, predict does not read it
    BrtParts p = copy(sst2);
    add_training_state(p, true);
    auto& m = *p.model.training_state->optimizer_tensors[0];
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(p.data.data() + m.offset, &nan, 4);
    g.emit("optimizer_moment_nan", "info,predict-ok", "optimizer tensor '.*': element 0 is not finite", p);
  }
  {
    BrtParts p = copy(sst2);
    add_training_state(p, true);
    auto kv = std::make_unique<fb::KeyNumberT>();
    kv->key = "lr";
    kv->value = std::nan("");
    p.model.training_state->hyper.push_back(std::move(kv));
    g.emit("optimizer_hyper_nan", "info,predict-ok", "training_state.hyper 'lr' = nan is not finite", p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: make_hostile_models TINY.brt SST2.brt INT8.brt DIR\n");
    return 2;
  }
  try {
    Generator g;
    g.dir = argv[4];
    g.manifest.open(g.dir + "/manifest.tsv");
    generate(g, parts_of(argv[1]), parts_of(argv[2]), parts_of(argv[3]));
    if (!g.manifest) throw std::runtime_error("cannot write the manifest");
    std::printf("make_hostile_models: %d files in %s\n", g.count, g.dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_hostile_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
