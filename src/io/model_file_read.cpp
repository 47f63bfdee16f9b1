// ModelFile::open: verify everything before handing out a single pointer into the mapping.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <unordered_set>

#include "bertrt_generated.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "io/buffer_crc.h"
#include "io/model_file.h"

namespace bertrt {

namespace {

constexpr size_t kHeaderBytes = 12;  // u32 size prefix, u32 root offset, 4-byte identifier
using Limits = ModelFileLimits;

// Everything the readers below need about the file, and the decoding budget: the header's
// decoded strings, vectors and records are charged to it before they are decoded, so entries that
// all point at one shared string (or one vector) fail at once instead of decoding gigabytes.
struct Reader {
  const std::string& path;
  const uint8_t* base;
  uint64_t file_size;
  uint64_t buffer_end;  // first byte after the FlatBuffer
  bool verify_checksums;
  uint64_t budget;  // bytes the decoded header may still take

  void charge(uint64_t bytes, const std::string& field) {
    if (bytes > budget)
      fail("{}: {}: the header decodes to more than {} times its {} bytes (many entries sharing "
           "one string or vector: a damaged or hostile file)",
           path, field, Limits::kHeaderExpansion, buffer_end);
    budget -= bytes;
  }
};

// What a decoded std::string or vector costs beyond its bytes (its object, allocator rounding).
constexpr uint64_t kObjectBytes = 32;

std::string str(Reader& r, const flatbuffers::String* s, const std::string& field, size_t max) {
  if (!s) return std::string();
  if (s->size() > max)
    fail("{}: {}: {} bytes, longer than the {}-byte limit (a damaged or hostile file)", r.path,
         field, s->size(), max);
  r.charge(s->size() + kObjectBytes, field);
  return s->str();
}

// Copied bytewise, not read element by element: the verifier checks a vector's alignment only to
// 4 bytes, so a corrupted offset can leave a [long] vector misaligned for its 8-byte elements
// (UBSan found it, model_file_test's flipped bytes). FlatBuffers are little-endian, as the hosts.
template <typename T>
std::vector<T> vec(Reader& r, const flatbuffers::Vector<T>* v, const std::string& field) {
  static_assert(FLATBUFFERS_LITTLEENDIAN, "the bytewise copy assumes a little-endian host");
  if (!v) return {};
  r.charge(uint64_t(v->size()) * sizeof(T) + kObjectBytes, field);
  std::vector<T> out(v->size());
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

// A vector of strings: its count and every length checked, and the total charged, before any
// string is decoded.
std::vector<std::string> strings(Reader& r,
                                 const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v,
                                 const std::string& field, size_t max_count, size_t max_len) {
  if (!v) return {};
  if (v->size() > max_count)
    fail("{}: {}: {} entries, more than the {} allowed (a damaged or hostile file)", r.path, field,
         v->size(), max_count);
  uint64_t total = 0;
  for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
    const size_t n = v->Get(i)->size();
    if (n > max_len)
      fail("{}: {}[{}]: {} bytes, longer than the {}-byte limit (a damaged or hostile file)",
           r.path, field, i, n, max_len);
    total += n + kObjectBytes;
  }
  r.charge(total + kObjectBytes, field);
  std::vector<std::string> out;
  out.reserve(v->size());
  for (const flatbuffers::String* s : *v) out.push_back(s->str());
  return out;
}

std::map<std::string, std::string> pairs(Reader& r,
                                         const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* v,
                                         const std::string& field, size_t max_count) {
  std::map<std::string, std::string> out;
  if (!v) return out;
  if (v->size() > max_count)
    fail("{}: {}: {} entries, more than the {} allowed (a damaged or hostile file)", r.path, field,
         v->size(), max_count);
  for (const fb::KeyValue* kv : *v) {
    std::string key = str(r, kv->key(), field + " key", Limits::kMaxNameBytes);
    std::string value = str(r, kv->value(), field + " '" + key + "'", Limits::kMaxValueBytes);
    if (!out.emplace(std::move(key), std::move(value)).second)
      fail("{}: {}: key '{}' appears twice (a damaged or hostile file)", r.path, field,
           kv->key()->str());
  }
  return out;
}

DType dtype_from_fb(const Reader& r, const std::string& name, fb::DType d) {
  switch (d) {
    case fb::DType::f32: return DType::f32;
    case fb::DType::f16: return DType::f16;
    case fb::DType::bf16: return DType::bf16;
    case fb::DType::i8: return DType::i8;
    case fb::DType::i32: return DType::i32;
  }
  fail("{}: tensor '{}': unknown dtype code {} (corrupted file or newer format)", r.path, name,
       static_cast<int>(d));
}

// A segment as the table states it, before anything of the tensor is decoded.
struct Segment {
  uint64_t offset, size;
  const fb::Tensor* table;
  bool optimizer;
};

std::string segment_name(const Segment& s) {
  return (s.optimizer ? "optimizer tensor '" : "tensor '") + s.table->name()->str().substr(0, 200) + "'";
}

// Every segment 64-byte aligned, after the FlatBuffer, inside the file, and no byte of the data
// region in two segments (safetensors' rule: no aliasing, so the bytes checked and the memory a
// model takes are bounded by the file). Sorting makes it O(n log n) in the number of segments.
// Returns the segments sorted by offset, for check_padding.
std::vector<Segment> check_layout(const Reader& r, std::vector<Segment> segs) {
  for (const Segment& s : segs) {
    if (s.offset % kSegmentAlignment != 0)
      fail("{}: {}: segment offset {} is not {}-byte aligned (corrupted file)", r.path,
           segment_name(s), s.offset, kSegmentAlignment);
    if (s.offset < r.buffer_end)
      fail("{}: {}: segment offset {} lies inside the FlatBuffer (ends at {}; corrupted file)",
           r.path, segment_name(s), s.offset, r.buffer_end);
    if (s.offset > r.file_size || s.size > r.file_size - s.offset)
      fail("{}: {}: segment [{}, +{}) runs past the end of the file ({} bytes; truncated?)", r.path,
           segment_name(s), s.offset, s.size, r.file_size);
  }
  std::sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.size < b.size;
  });
  uint64_t end = r.buffer_end;
  const Segment* last = nullptr;
  for (const Segment& s : segs) {
    if (s.size == 0) continue;  // owns no byte
    if (last && s.offset < end)
      fail("{}: {}: segment [{}, +{}) overlaps {} [{}, +{}): each byte of the data belongs to one "
           "tensor (a damaged or hostile file)",
           r.path, segment_name(s), s.offset, s.size, segment_name(*last), last->offset,
           last->size);
    end = s.offset + s.size;
    last = &s;
  }
  return segs;
}

// No byte of the data region in no segment either, but zero padding of under 64 bytes before a
// segment or at the end: no data hides outside the checksummed segments (a polyglot file). After
// the records are checked, whose errors say more about a damaged file.
void check_padding(const Reader& r, const std::vector<Segment>& sorted) {
  auto padding = [&](uint64_t from, uint64_t to, const std::string& where) {
    if (to - from >= kSegmentAlignment)
      fail("{}: bytes [{}, {}) {} belong to no tensor: only zero padding of under {} bytes may lie "
           "between segments (a damaged or hostile file)",
           r.path, from, to, where, kSegmentAlignment);
    for (uint64_t i = from; i < to; ++i)
      if (r.base[i] != 0)
        fail("{}: byte {} {} belongs to no tensor and is not zero padding (a damaged or hostile "
             "file)",
             r.path, i, where);
  };
  uint64_t end = r.buffer_end;
  for (const Segment& s : sorted) {
    if (s.size == 0) continue;
    padding(end, s.offset, "before " + segment_name(s));
    end = s.offset + s.size;
  }
  padding(end, r.file_size, "at the end of the file");
}

[[noreturn]] void no_checksums(const Reader& r, const std::string& what) {
  fail("{}: {} carries no checksum, and checksums are required (a file written by an older "
       "bertrt, or edited): re-save it with `bertrt-convert --no-verify-checksums {} -o NEW.brt` "
       "if you trust it, or load it unchecked with --no-verify-checksums "
       "(BERTRT_VERIFY_CHECKSUMS=0; C API options.verify_checksums = 0)",
       r.path, what, r.path);
}

TensorRecord read_tensor(Reader& r, const fb::Tensor& t, bool optimizer) {
  const std::string kind = optimizer ? "optimizer tensor" : "tensor";
  TensorRecord rec;
  rec.name = str(r, t.name(), kind + " name", Limits::kMaxNameBytes);  // required: verified
  const std::string id = kind + " '" + rec.name + "'";
  if (t.shape() && t.shape()->size() > Limits::kMaxRank)
    fail("{}: {}: {} dimensions, more than {} (a damaged or hostile file)", r.path, id,
         t.shape()->size(), Limits::kMaxRank);
  rec.shape = vec(r, t.shape(), id + " shape");
  rec.dtype = dtype_from_fb(r, rec.name, t.dtype());
  if (const fb::Quantization* q = t.quantization()) {
    rec.scales = vec(r, q->scales(), id + " scales");
    rec.zero_points = vec(r, q->zero_points(), id + " zero_points");
    rec.axis = q->axis();
  }
  rec.data = r.base + t.offset();  // in bounds: check_layout
  rec.nbytes = static_cast<size_t>(t.size());
  r.charge(256, id);  // the record itself
  const std::string where = optimizer ? r.path + ": optimizer state" : r.path;
  validate_tensor_record(rec, where);
  if (const flatbuffers::Optional<uint32_t> stored = t.crc32c()) rec.crc32c = *stored;
  return rec;
}

// The one pass over a segment: its checksum (when verified) and its values.
void scan(const Reader& r, const TensorRecord& t, bool optimizer) {
  const std::string id = (optimizer ? "optimizer tensor '" : "tensor '") + t.name + "'";
  uint32_t crc = 0;
  const bool sum = r.verify_checksums && t.crc32c;
  const int64_t bad = scan_segment(t.data, t.nbytes, t.dtype, sum ? &crc : nullptr);
  if (bad >= 0)
    fail("{}: {}: element {} is not finite ({} NaN or infinity): a model's {} must be finite (a "
         "damaged or hostile file)",
         r.path, id, bad, dtype_name(t.dtype), optimizer ? "optimizer moments" : "weights");
  if (sum && crc != *t.crc32c)
    fail("{}: {}: checksum mismatch (CRC-32C of its {} bytes at offset {} is {:#010x}, the file "
         "stores {:#010x}): the file is corrupted; copy it again",
         r.path, id, t.nbytes, t.data - r.base, crc, *t.crc32c);
}

std::vector<TensorRecord> read_tensors(Reader& r,
                                       const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v,
                                       bool optimizer) {
  std::vector<TensorRecord> out;
  if (!v) return out;
  out.reserve(v->size());
  for (const fb::Tensor* t : *v) out.push_back(read_tensor(r, *t, optimizer));
  // Names hashed: a quadratic scan over a hostile file's records would be its own denial of
  // service.
  std::unordered_set<std::string_view> names;
  names.reserve(out.size());
  for (const TensorRecord& t : out)
    if (!names.insert(t.name).second)
      fail("{}: {} '{}' appears twice (corrupted file)", r.path,
           optimizer ? "optimizer tensor" : "tensor", t.name);
  return out;
}

// A kind written by a newer bertrt is named rather than guessed.
HeadKind read_head_kind(const std::string& path, fb::HeadKind k) {
  switch (k) {
    case fb::HeadKind::none: return HeadKind::kNone;
    case fb::HeadKind::sequence_classification: return HeadKind::kSequenceClassification;
    case fb::HeadKind::regression: return HeadKind::kRegression;
    case fb::HeadKind::token_classification: return HeadKind::kTokenClassification;
    case fb::HeadKind::question_answering: return HeadKind::kQuestionAnswering;
  }
  fail("{}: heads.kind {} is unknown to this build (written by a newer bertrt?)", path, int(k));
}

BertConfig read_config(Reader& r, const fb::Config& c) {
  BertConfig cfg;
  cfg.vocab_size = c.vocab_size();
  cfg.hidden_size = c.hidden_size();
  cfg.num_hidden_layers = c.num_hidden_layers();
  cfg.num_attention_heads = c.num_attention_heads();
  cfg.intermediate_size = c.intermediate_size();
  if (c.hidden_act()) cfg.hidden_act = str(r, c.hidden_act(), "config.hidden_act", 64);
  cfg.max_position_embeddings = c.max_position_embeddings();
  cfg.type_vocab_size = c.type_vocab_size();
  cfg.layer_norm_eps = c.layer_norm_eps();
  cfg.pad_token_id = c.pad_token_id();
  cfg.initializer_range = c.initializer_range();
  cfg.hidden_dropout_prob = c.hidden_dropout_prob();
  cfg.attention_probs_dropout_prob = c.attention_probs_dropout_prob();
  try {
    cfg.validate();
  } catch (const Error& e) {
    fail("{}: {}", r.path, e.what());
  }
  return cfg;
}

TokenizerSpec read_tokenizer(Reader& r, const fb::Tokenizer& t, const BertConfig& config) {
  TokenizerSpec s;
  // vocab_size may exceed the vocab (padded embeddings, as some released models do), never the
  // other way round: an id without an embedding row would index out of bounds. Checked before
  // the vocab is decoded.
  if (t.vocab() && t.vocab()->size() > uint64_t(config.vocab_size))
    fail("{}: tokenizer vocab has {} tokens but config.vocab_size is only {}", r.path,
         t.vocab()->size(), config.vocab_size);
  s.vocab = strings(r, t.vocab(), "tokenizer.vocab", size_t(config.vocab_size), Limits::kMaxNameBytes);
  if (s.vocab.empty()) fail("{}: tokenizer vocab is empty", r.path);
  // One token a line in vocab.txt: a line break or NUL in one cannot come from a vocabulary, and
  // would forge lines where tokens are printed.
  for (size_t i = 0; i < s.vocab.size(); ++i)
    if (s.vocab[i].find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
      fail("{}: tokenizer.vocab[{}]: a token holds a line break or NUL (a damaged or hostile file)",
           r.path, i);
  s.do_lower_case = t.do_lower_case();
  switch (t.strip_accents()) {
    case fb::TriState::unset: break;
    case fb::TriState::true_: s.strip_accents = true; break;
    case fb::TriState::false_: s.strip_accents = false; break;
    default:
      fail("{}: tokenizer strip_accents has invalid code {}", r.path,
           static_cast<int>(t.strip_accents()));
  }
  s.tokenize_chinese_chars = t.tokenize_chinese_chars();
  s.max_input_chars_per_word = t.max_input_chars_per_word();
  if (s.max_input_chars_per_word < 1 || s.max_input_chars_per_word > (1 << 20))
    fail("{}: tokenizer.max_input_chars_per_word {} is outside [1, {}]", r.path,
         s.max_input_chars_per_word, 1 << 20);
  const size_t n = Limits::kMaxNameBytes;
  if (t.unk_token()) s.unk_token = str(r, t.unk_token(), "tokenizer.unk_token", n);
  if (t.sep_token()) s.sep_token = str(r, t.sep_token(), "tokenizer.sep_token", n);
  if (t.pad_token()) s.pad_token = str(r, t.pad_token(), "tokenizer.pad_token", n);
  if (t.cls_token()) s.cls_token = str(r, t.cls_token(), "tokenizer.cls_token", n);
  if (t.mask_token()) s.mask_token = str(r, t.mask_token(), "tokenizer.mask_token", n);
  return s;
}

EmbeddingConfig read_embedding(Reader& r, const fb::EmbeddingHead& e) {
  EmbeddingConfig out;
  const fb::Pooling* p = e.pooling();  // required: the verifier checked it is there
  PoolingConfig& pc = out.pooling;
  pc.cls_token = p->cls_token();
  pc.max_tokens = p->max_tokens();
  pc.mean_tokens = p->mean_tokens();
  pc.mean_sqrt_len_tokens = p->mean_sqrt_len_tokens();
  pc.weightedmean_tokens = p->weightedmean_tokens();
  pc.lasttoken = p->lasttoken();
  pc.include_prompt = p->include_prompt();
  const size_t n = Limits::kMaxNameBytes;
  if (const auto* dense = e.dense()) {
    if (dense->size() > Limits::kMaxDenseModules)
      fail("{}: heads.embedding.dense: {} modules, more than the {} allowed (a damaged or hostile "
           "file)", r.path, dense->size(), Limits::kMaxDenseModules);
    for (const fb::DenseModule* d : *dense) {
      DenseConfig dc;
      dc.path = str(r, d->path(), "heads.embedding.dense.path", n);
      dc.in_features = d->in_features();
      dc.out_features = d->out_features();
      dc.bias = d->bias();
      dc.activation_function = str(r, d->activation_function(), "heads.embedding.dense." +
                                   dc.path + ".activation_function", n);
      out.dense.push_back(std::move(dc));
    }
  }
  out.normalize = e.normalize();
  out.max_seq_length = e.max_seq_length();
  out.do_lower_case = e.do_lower_case();
  if (const auto* prompts = e.prompts()) {
    if (prompts->size() > Limits::kMaxMetadata)
      fail("{}: heads.embedding.prompts: {} entries, more than the {} allowed (a damaged or "
           "hostile file)", r.path, prompts->size(), Limits::kMaxMetadata);
    for (const fb::KeyValue* kv : *prompts)
      out.prompts.emplace_back(str(r, kv->key(), "heads.embedding.prompts key", n),
                               str(r, kv->value(), "heads.embedding.prompts value",
                                   Limits::kMaxValueBytes));
  }
  out.default_prompt_name = str(r, e.default_prompt_name(), "heads.embedding.default_prompt_name", n);
  if (e.similarity_fn_name())
    out.similarity_fn_name = str(r, e.similarity_fn_name(), "heads.embedding.similarity_fn_name", n);
  return out;
}

HeadsConfig read_heads(Reader& r, const fb::Heads* h) {
  HeadsConfig heads;
  if (h) {
    heads.mlm = h->mlm();
    heads.nsp = h->nsp();
    heads.task = str(r, h->task(), "heads.task", Limits::kMaxNameBytes);
    heads.labels = strings(r, h->labels(), "heads.labels", Limits::kMaxLabels, Limits::kMaxNameBytes);
    heads.kind = read_head_kind(r.path, h->kind());
    if (h->embedding()) heads.embedding = read_embedding(r, *h->embedding());
  }
  try {
    heads.validate();
  } catch (const Error& e) {
    fail("{}: {}", r.path, e.what());
  }
  heads.kind = heads.resolved_kind();
  return heads;
}

TrainingState read_training_state(Reader& r, const fb::TrainingState& s) {
  TrainingState out;
  out.step = s.step();
  if (out.step < 0) fail("{}: training_state.step {} is negative", r.path, out.step);
  out.optimizer = str(r, s.optimizer(), "training_state.optimizer", Limits::kMaxNameBytes);
  if (const auto* hyper = s.hyper()) {
    if (hyper->size() > Limits::kMaxHyper)
      fail("{}: training_state.hyper: {} entries, more than the {} allowed", r.path, hyper->size(),
           Limits::kMaxHyper);
    for (const fb::KeyNumber* kv : *hyper) {
      std::string key = str(r, kv->key(), "training_state.hyper key", Limits::kMaxNameBytes);
      if (!std::isfinite(kv->value()))
        fail("{}: training_state.hyper '{}' = {} is not finite", r.path, key, kv->value());
      if (!out.hyper.emplace(key, kv->value()).second)
        fail("{}: training_state.hyper: key '{}' appears twice", r.path, key);
    }
  }
  out.schedule = pairs(r, s.schedule(), "training_state.schedule", Limits::kMaxHyper);
  out.rng_state = vec(r, s.rng_state(), "training_state.rng_state");
  out.data_cursor = s.data_cursor();
  out.optimizer_tensors = read_tensors(r, s.optimizer_tensors(), /*optimizer=*/true);
  return out;
}

// Size, identifier and FlatBuffer structure; returns the verified root.
const fb::Model* verify_buffer(const std::string& path, const uint8_t* base, uint64_t size) {
  if (size == 0) fail("{}: empty file, not a bertrt model file", path);
  if (size < kHeaderBytes)
    fail("{}: {} bytes is too small for a bertrt model file (truncated?)", path, size);
  if (std::memcmp(base + 8, fb::ModelIdentifier(), 4) != 0)
    fail("{}: not a bertrt model file (expected identifier BRT1)", path);
  uint32_t buffer_size = 0;
  std::memcpy(&buffer_size, base, 4);
  if (buffer_size + uint64_t(4) > size)
    fail("{}: truncated: the FlatBuffer needs {} bytes, the file has {}", path, buffer_size + uint64_t(4), size);
  if (buffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    fail("{}: FlatBuffer size {} exceeds the 2 GB FlatBuffers limit (corrupted file)", path, buffer_size);
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 10'000'000;  // one table per tensor and per key/value: generous but bounded
  flatbuffers::Verifier verifier(base, buffer_size + size_t(4), opts);
  if (!fb::VerifySizePrefixedModelBuffer(verifier))
    fail("{}: FlatBuffer failed verification (corrupted file: bad offsets, missing required fields or "
         "structure past its end)", path);
  const fb::Model* model = fb::GetSizePrefixedModel(base);
  if (model->format_version() > kModelFormatVersion)
    fail("{}: format version {} is newer than this build reads ({})", path, model->format_version(),
         kModelFormatVersion);
  if (model->format_version() == 0) fail("{}: format version 0 is invalid (corrupted file)", path);
  return model;
}

std::atomic<int> g_verify_override{-1};  // -1: follow the environment

}  // namespace

bool default_verify_checksums() {
  const int o = g_verify_override.load();
  if (o >= 0) return o == 1;
  const char* env = std::getenv("BERTRT_VERIFY_CHECKSUMS");
  if (!env) return true;
  const std::string v = env;
  return !(v == "0" || v == "false" || v == "no" || v == "off");
}

void set_default_verify_checksums(bool verify) { g_verify_override.store(verify ? 1 : 0); }

ModelFile ModelFile::open(const std::string& path) {
  return open(path, OpenOptions{default_verify_checksums()});
}

ModelFile ModelFile::open(const std::string& path, const OpenOptions& options) {
  try {
    return open_file(path, options);
  } catch (const std::bad_alloc&) {
    fail("{}: out of memory while reading the model file's header (its counts and strings are "
         "bounded by the file's size: the device is short of memory, or the file is damaged)",
         path);
  }
}

ModelFile ModelFile::open_file(const std::string& path, const OpenOptions& options) {
  ModelFile f;
  f.checksums_verified_ = options.verify_checksums;
  f.file_ = std::make_shared<const MappedFile>(MappedFile::open(path, /*copy_on_write=*/true));
  const uint8_t* base = f.file_->data();
  const fb::Model* model = verify_buffer(path, base, f.file_->size());
  uint32_t buffer_size = 0;
  std::memcpy(&buffer_size, base, 4);
  const uint64_t buffer_end = buffer_size + uint64_t(4);
  Reader r{path, base, f.file_->size(), buffer_end, options.verify_checksums,
           Limits::kHeaderExpansion * buffer_end + (uint64_t(1) << 20)};

  // Checksums first: every one that will be checked must be there, before any work.
  const fb::TrainingState* state = model->training_state();
  f.has_training_state_ = state != nullptr;
  const bool read_state = state && options.training_state;
  if (options.verify_checksums) {
    if (!model->buffer_crc32c()) no_checksums(r, "the model's header");
    auto require = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v, bool opt) {
      if (v)
        for (const fb::Tensor* t : *v)
          if (!t->crc32c())
            no_checksums(r, (opt ? "optimizer tensor '" : "tensor '") + t->name()->str().substr(0, 200) + "'");
    };
    require(model->tensors(), false);
    if (read_state) require(state->optimizer_tensors(), true);
  }
  if (const flatbuffers::Optional<uint32_t> stored = model->buffer_crc32c()) {
    f.buffer_checksummed_ = true;
    if (options.verify_checksums) {
      const uint32_t actual = buffer_crc(base, size_t(buffer_end), buffer_crc_field_offset(base));
      if (actual != *stored)
        fail("{}: checksum mismatch in the model's header (config, vocabulary, heads, metadata): "
             "CRC-32C {:08x}, the file says {:08x} (corrupted file; --no-verify-checksums loads it "
             "as it is)", path, actual, *stored);
    }
  }

  // Where every segment lies (the training state's too, read or not), from the tables alone.
  std::vector<Segment> segs;
  auto place = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v, bool opt) {
    if (v)
      for (const fb::Tensor* t : *v) segs.push_back({t->offset(), t->size(), t, opt});
  };
  place(model->tensors(), false);
  if (state) place(state->optimizer_tensors(), true);
  const std::vector<Segment> sorted = check_layout(r, std::move(segs));

  ModelContents& m = f.contents_;
  m.config = read_config(r, *model->config());
  m.tokenizer = read_tokenizer(r, *model->tokenizer(), m.config);
  m.heads = read_heads(r, model->heads());
  if (m.heads.embedding) {
    try {
      m.heads.embedding->validate(m.config.hidden_size, m.config.max_position_embeddings);
    } catch (const Error& e) {
      fail("{}: {}", r.path, e.what());
    }
  }
  m.metadata = pairs(r, model->metadata(), "metadata", Limits::kMaxMetadata);
  m.tensors = read_tensors(r, model->tensors(), false);
  if (read_state) m.training_state = read_training_state(r, *state);
  check_padding(r, sorted);

  // The one pass over the bytes: checksums and values together.
  for (const TensorRecord& t : m.tensors) scan(r, t, false);
  if (m.training_state)
    for (const TensorRecord& t : m.training_state->optimizer_tensors) scan(r, t, true);

  f.index_.reserve(m.tensors.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) f.index_.emplace(m.tensors[i].name, i);
  return f;
}

const TensorRecord* ModelFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &contents_.tensors[it->second];
}

size_t ModelFile::segments() const {
  const auto& s = contents_.training_state;
  return contents_.tensors.size() + (s ? s->optimizer_tensors.size() : 0);
}

size_t ModelFile::checksummed_segments() const {
  size_t n = 0;
  for (const TensorRecord& t : contents_.tensors) n += t.crc32c.has_value();
  if (const auto& s = contents_.training_state)
    for (const TensorRecord& t : s->optimizer_tensors) n += t.crc32c.has_value();
  return n;
}

void ModelFile::release_optimizer_pages() const {
  if (const auto& s = contents_.training_state)
    for (const TensorRecord& t : s->optimizer_tensors) MappedFile::release_pages(t.data, t.nbytes);
}

const TensorRecord& ModelFile::at(const std::string& name) const {
  const TensorRecord* t = find(name);
  if (!t) fail("{}: no tensor named '{}' ({} tensors in the file)", path(), name, contents_.tensors.size());
  return *t;
}

}  // namespace bertrt
