#include "brt_edit.h"

#include <algorithm>
#include <cstring>

#include "core/crc32c.h"
#include "io/buffer_crc.h"

namespace bertrt::hostile {

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

uint64_t strings_bytes(const flatbuffers::Vector<Offset<flatbuffers::String>>* v) {
  uint64_t n = 0;
  if (v)
    for (const flatbuffers::String* s : *v) n += s->size() + 32;
  return n;
}

uint64_t pairs_bytes(const flatbuffers::Vector<Offset<fb::KeyValue>>* v) {
  uint64_t n = 0;
  if (v)
    for (const fb::KeyValue* kv : *v) n += kv->key()->size() + (kv->value() ? kv->value()->size() : 0) + 64;
  return n;
}

uint64_t tensors_bytes(const flatbuffers::Vector<Offset<fb::Tensor>>* v) {
  uint64_t n = 0;
  if (v)
    for (const fb::Tensor* t : *v) n += t->name()->size() + 256;
  return n;
}

// Packs with shared or plain strings; the field order follows io/model_file_write.cpp.
class Packer {
 public:
  Packer(FlatBufferBuilder& b, bool share) : b_(b), share_(share) {}

  Offset<flatbuffers::String> str(const std::string& s) {
    return share_ ? b_.CreateSharedString(s) : b_.CreateString(s);
  }
  Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> strs(const std::vector<std::string>& v) {
    std::vector<Offset<flatbuffers::String>> out;
    out.reserve(v.size());
    for (const std::string& s : v) out.push_back(str(s));
    return b_.CreateVector(out);
  }
  Offset<fb::Tensor> tensor(const fb::TensorT& t, uint64_t base) {
    const auto name = str(t.name);
    const auto shape = b_.CreateVector(t.shape);
    Offset<fb::Quantization> q = 0;
    if (t.quantization) q = fb::CreateQuantization(b_, t.quantization.get());
    fb::TensorBuilder tb(b_);
    tb.add_name(name);
    tb.add_shape(shape);
    tb.add_dtype(t.dtype);
    tb.add_offset(t.offset + base);
    tb.add_size(t.size);
    if (q.o) tb.add_quantization(q);
    if (t.crc32c) tb.add_crc32c(*t.crc32c);
    return tb.Finish();
  }
  Offset<flatbuffers::Vector<Offset<fb::Tensor>>> tensors(
      const std::vector<std::unique_ptr<fb::TensorT>>& v, uint64_t base) {
    std::vector<Offset<fb::Tensor>> out;
    for (const auto& t : v) out.push_back(tensor(*t, base));
    return b_.CreateVector(out);
  }
  Offset<flatbuffers::Vector<Offset<fb::KeyValue>>> pairs(
      const std::vector<std::unique_ptr<fb::KeyValueT>>& v) {
    std::vector<Offset<fb::KeyValue>> out;
    for (const auto& kv : v) {
      const auto k = str(kv->key);
      const auto val = str(kv->value);
      out.push_back(fb::CreateKeyValue(b_, k, val));
    }
    return b_.CreateVector(out);
  }
  // Written as io/model_file_write.cpp's build_embedding writes it (every string stored, one
  // CreateString a statement); a missing pooling (required) is left out, as a hostile file may.
  Offset<fb::EmbeddingHead> embedding(const fb::EmbeddingHeadT& e) {
    Offset<fb::Pooling> pooling = 0;
    if (e.pooling) pooling = fb::CreatePooling(b_, e.pooling.get());
    std::vector<Offset<fb::DenseModule>> dense;
    for (const auto& d : e.dense) {
      const auto path = str(d->path);
      const auto act = str(d->activation_function);
      dense.push_back(fb::CreateDenseModule(b_, path, d->in_features, d->out_features, d->bias, act));
    }
    const auto dense_vec = b_.CreateVector(dense);
    const auto prompts = pairs(e.prompts);
    const auto default_prompt = str(e.default_prompt_name);
    const auto similarity = str(e.similarity_fn_name);
    fb::EmbeddingHeadBuilder eb(b_);
    if (pooling.o) eb.add_pooling(pooling);
    eb.add_dense(dense_vec);
    eb.add_normalize(e.normalize);
    eb.add_max_seq_length(e.max_seq_length);
    eb.add_do_lower_case(e.do_lower_case);
    eb.add_prompts(prompts);
    eb.add_default_prompt_name(default_prompt);
    eb.add_similarity_fn_name(similarity);
    // EndTable, not Finish: Finish asserts (debug builds) that the required pooling is there.
    return Offset<fb::EmbeddingHead>(b_.EndTable(eb.start_));
  }

 private:
  FlatBufferBuilder& b_;
  bool share_;
};

std::string pack(const fb::ModelT& m, bool share, uint64_t base) {
  FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(true);
  Packer p(b, share);
  Offset<fb::Config> config = 0;
  if (m.config) {
    const auto act = p.str(m.config->hidden_act);
    const fb::ConfigT& c = *m.config;
    config = fb::CreateConfig(b, c.vocab_size, c.hidden_size, c.num_hidden_layers,
                              c.num_attention_heads, c.intermediate_size, act,
                              c.max_position_embeddings, c.type_vocab_size, c.layer_norm_eps,
                              c.pad_token_id, c.initializer_range, c.hidden_dropout_prob,
                              c.attention_probs_dropout_prob);
  }
  Offset<fb::Tokenizer> tok = 0;
  if (m.tokenizer) {
    const fb::TokenizerT& t = *m.tokenizer;
    const auto vocab = p.strs(t.vocab);
    const auto unk = p.str(t.unk_token);
    const auto sep = p.str(t.sep_token);
    const auto pad = p.str(t.pad_token);
    const auto cls = p.str(t.cls_token);
    const auto mask = p.str(t.mask_token);
    tok = fb::CreateTokenizer(b, vocab, t.do_lower_case, t.strip_accents, t.tokenize_chinese_chars,
                              t.max_input_chars_per_word, unk, sep, pad, cls, mask);
  }
  const auto tensors = p.tensors(m.tensors, base);
  Offset<fb::Heads> heads = 0;
  if (m.heads) {
    const auto task = p.str(m.heads->task);
    const auto labels = p.strs(m.heads->labels);
    Offset<fb::EmbeddingHead> embedding = 0;
    if (m.heads->embedding) embedding = p.embedding(*m.heads->embedding);
    heads = fb::CreateHeads(b, m.heads->mlm, m.heads->nsp, task, labels, m.heads->kind, embedding);
  }
  Offset<fb::TrainingState> state = 0;
  if (m.training_state) {
    const fb::TrainingStateT& s = *m.training_state;
    std::vector<Offset<fb::KeyNumber>> hyper;
    for (const auto& kv : s.hyper) {
      const auto k = p.str(kv->key);
      hyper.push_back(fb::CreateKeyNumber(b, k, kv->value));
    }
    const auto hv = b.CreateVector(hyper);
    const auto schedule = p.pairs(s.schedule);
    const auto opt = p.str(s.optimizer);
    const auto rng = b.CreateVector(s.rng_state);
    const auto moments = p.tensors(s.optimizer_tensors, base);
    state = fb::CreateTrainingState(b, s.step, opt, hv, schedule, rng, s.data_cursor, moments);
  }
  const auto metadata = p.pairs(m.metadata);
  fb::ModelBuilder mb(b);
  mb.add_format_version(m.format_version);
  if (config.o) mb.add_config(config);
  if (tok.o) mb.add_tokenizer(tok);
  mb.add_tensors(tensors);
  if (heads.o) mb.add_heads(heads);
  if (state.o) mb.add_training_state(state);
  mb.add_metadata(metadata);
  if (m.buffer_crc32c) mb.add_buffer_crc32c(0u);  // patched in by put_together
  // FinishSizePrefixed without the verifier's "required" check: a hostile file may omit them.
  b.FinishSizePrefixed(mb.Finish(), fb::ModelIdentifier());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

void fill_crcs(std::vector<std::unique_ptr<fb::TensorT>>& v, const std::string& data) {
  for (auto& t : v) {
    if (!t->crc32c) continue;
    if (t->offset > data.size() || t->size > data.size() - t->offset) continue;  // outside
    t->crc32c = crc32c::value(data.data() + t->offset, static_cast<size_t>(t->size));
  }
}

}  // namespace

std::optional<BrtParts> take_apart(const std::string& file, uint64_t max_decoded) {
  if (file.size() < 12 || std::memcmp(file.data() + 8, fb::ModelIdentifier(), 4) != 0) return std::nullopt;
  uint32_t size = 0;
  std::memcpy(&size, file.data(), 4);
  if (size + uint64_t(4) > file.size() || size >= FLATBUFFERS_MAX_BUFFER_SIZE) return std::nullopt;
  const auto* base = reinterpret_cast<const uint8_t*>(file.data());
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 10'000'000;
  flatbuffers::Verifier verifier(base, size + size_t(4), opts);
  if (!fb::VerifySizePrefixedModelBuffer(verifier)) return std::nullopt;
  const fb::Model* model = fb::GetSizePrefixedModel(base);
  uint64_t decoded = pairs_bytes(model->metadata()) + tensors_bytes(model->tensors());
  if (model->tokenizer()) decoded += strings_bytes(model->tokenizer()->vocab());
  if (model->heads()) {
    decoded += strings_bytes(model->heads()->labels());
    if (const fb::EmbeddingHead* e = model->heads()->embedding()) {
      decoded += pairs_bytes(e->prompts());
      if (e->dense())
        for (const fb::DenseModule* d : *e->dense())
          decoded += d->path()->size() + (d->activation_function() ? d->activation_function()->size() : 0) + 96;
    }
  }
  if (const fb::TrainingState* s = model->training_state())
    decoded += tensors_bytes(s->optimizer_tensors()) + pairs_bytes(s->schedule());
  if (decoded > max_decoded) return std::nullopt;
  BrtParts p;
  model->UnPackTo(&p.model);
  const uint64_t start = std::min<uint64_t>(align_up(size + uint64_t(4)), file.size());
  p.data = file.substr(start);
  for (auto& t : p.model.tensors) t->offset -= start;
  if (p.model.training_state)
    for (auto& t : p.model.training_state->optimizer_tensors) t->offset -= start;
  return p;
}

std::string put_together(const BrtParts& parts, const PackOptions& options) {
  BrtParts p;  // a copy whose checksums are filled in
  p.model = parts.model;
  const std::string& data = parts.data;
  if (options.checksums) {
    fill_crcs(p.model.tensors, data);
    if (p.model.training_state) fill_crcs(p.model.training_state->optimizer_tensors, data);
  }
  // With every scalar stored (ForceDefaults), the offsets' values do not change the size: pack
  // once to learn where the data starts, then again with the offsets there.
  std::string buf = pack(p.model, options.share_strings, 0);
  const uint64_t start = align_up(buf.size());
  buf = pack(p.model, options.share_strings, start);
  if (align_up(buf.size()) != start) buf = pack(p.model, options.share_strings, align_up(buf.size()));
  if (options.checksums && p.model.buffer_crc32c) {
    const size_t field = buffer_crc_field_offset(reinterpret_cast<const uint8_t*>(buf.data()));
    if (field != 0) {
      const uint32_t crc = buffer_crc(reinterpret_cast<const uint8_t*>(buf.data()), buf.size(), field);
      std::memcpy(buf.data() + field, &crc, 4);
    }
  }
  std::string out = buf;
  out.resize(align_up(out.size()), '\0');
  out += data;
  return out;
}

uint64_t append_segment(BrtParts& parts, const std::string& bytes) {
  parts.data.resize(align_up(parts.data.size()), '\0');
  const uint64_t at = parts.data.size();
  parts.data += bytes;
  return at;
}

void compact(BrtParts& parts) {
  std::vector<fb::TensorT*> all;
  for (auto& t : parts.model.tensors) all.push_back(t.get());
  if (parts.model.training_state)
    for (auto& t : parts.model.training_state->optimizer_tensors) all.push_back(t.get());
  const uint64_t n = parts.data.size();
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges;
  for (const fb::TensorT* t : all)
    if (t->size > 0 && t->offset <= n && t->size <= n - t->offset)
      ranges.push_back({t->offset, t->offset + t->size});
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<Range> merged;  // overlapping ranges copied as one, so aliases stay aliases
  for (const Range& r : ranges)
    if (!merged.empty() && r.begin < merged.back().end)
      merged.back().end = std::max(merged.back().end, r.end);
    else
      merged.push_back(r);
  std::string data;
  std::vector<uint64_t> moved;  // new start of each merged range
  for (const Range& r : merged) {
    data.resize(align_up(data.size()), '\0');
    moved.push_back(data.size());
    data.append(parts.data, r.begin, r.end - r.begin);
  }
  for (fb::TensorT* t : all) {
    if (t->offset > n || t->size > n - t->offset) continue;
    const auto it = std::upper_bound(merged.begin(), merged.end(), t->offset,
                                     [](uint64_t off, const Range& r) { return off < r.begin; });
    if (t->size == 0 && (it == merged.begin() || t->offset >= std::prev(it)->end)) {
      t->offset = (it == merged.end() ? align_up(data.size()) : moved[size_t(it - merged.begin())]);
      continue;  // an empty segment: placed where the next one starts
    }
    const size_t k = size_t(std::prev(it) - merged.begin());
    t->offset = moved[k] + (t->offset - merged[k].begin);
  }
  parts.data = std::move(data);
}

std::unique_ptr<fb::TensorT> make_tensor(const std::string& name, std::vector<int64_t> shape,
                                         fb::DType dtype, uint64_t rel_offset, uint64_t size) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->offset = rel_offset;
  t->size = size;
  t->crc32c = 0u;
  return t;
}

fb::TensorT* find_tensor(BrtParts& parts, const std::string& name) {
  for (auto& t : parts.model.tensors)
    if (t->name == name) return t.get();
  return nullptr;
}

}  // namespace bertrt::hostile
