// ModelFile::open: verify everything before handing out a single pointer into the mapping.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "bertrt_generated.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "io/buffer_crc.h"
#include "io/model_file.h"

namespace bertrt {

namespace {

constexpr size_t kHeaderBytes = 12;  // u32 size prefix, u32 root offset, 4-byte identifier

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// Copied bytewise, not read element by element: the verifier checks a vector's alignment only to
// 4 bytes, so a corrupted offset can leave a [long] vector misaligned for its 8-byte elements
// (UBSan found it, model_file_test's flipped bytes). FlatBuffers are little-endian, as the hosts.
template <typename T>
std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  static_assert(FLATBUFFERS_LITTLEENDIAN, "the bytewise copy assumes a little-endian host");
  std::vector<T> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v)
    for (const flatbuffers::String* s : *v) out.push_back(s->str());
  return out;
}

std::map<std::string, std::string> pairs(const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* v) {
  std::map<std::string, std::string> out;
  if (v)
    for (const fb::KeyValue* kv : *v) out[kv->key()->str()] = str(kv->value());
  return out;
}

// Everything about the file the tensor checks need.
struct Layout {
  const std::string& path;
  const uint8_t* base;
  uint64_t file_size;
  uint64_t buffer_end;  // first byte after the FlatBuffer
  bool verify_checksums;
};

DType dtype_from_fb(const Layout& l, const std::string& name, fb::DType d) {
  switch (d) {
    case fb::DType::f32: return DType::f32;
    case fb::DType::f16: return DType::f16;
    case fb::DType::bf16: return DType::bf16;
    case fb::DType::i8: return DType::i8;
    case fb::DType::i32: return DType::i32;
  }
  fail("{}: tensor '{}': unknown dtype code {} (corrupted file or newer format)", l.path, name, static_cast<int>(d));
}

TensorRecord read_tensor(const Layout& l, const fb::Tensor& t) {
  TensorRecord r;
  r.name = t.name()->str();  // required field: the verifier guarantees it
  r.shape = vec(t.shape());
  r.dtype = dtype_from_fb(l, r.name, t.dtype());
  if (const fb::Quantization* q = t.quantization()) {
    r.scales = vec(q->scales());
    r.zero_points = vec(q->zero_points());
    r.axis = q->axis();
  }
  const uint64_t offset = t.offset(), size = t.size();
  if (offset % kSegmentAlignment != 0)
    fail("{}: tensor '{}': segment offset {} is not {}-byte aligned (corrupted file)", l.path, r.name, offset,
         kSegmentAlignment);
  if (offset < l.buffer_end)
    fail("{}: tensor '{}': segment offset {} lies inside the FlatBuffer (ends at {}; corrupted file)", l.path,
         r.name, offset, l.buffer_end);
  if (offset > l.file_size || size > l.file_size - offset)
    fail("{}: tensor '{}': segment [{}, +{}) runs past the end of the file ({} bytes; truncated?)", l.path, r.name,
         offset, size, l.file_size);
  r.data = l.base + offset;
  r.nbytes = static_cast<size_t>(size);
  validate_tensor_record(r, l.path);
  if (const flatbuffers::Optional<uint32_t> stored = t.crc32c()) {
    r.crc32c = *stored;
    if (l.verify_checksums) {
      const uint32_t actual = crc32c::value(r.data, r.nbytes);
      if (actual != *stored)
        fail("{}: tensor '{}': checksum mismatch (CRC-32C of its {} bytes at offset {} is "
             "{:#010x}, the file stores {:#010x}): the file is corrupted; copy it again",
             l.path, r.name, r.nbytes, offset, actual, *stored);
    }
  }
  return r;
}

std::vector<TensorRecord> read_tensors(const Layout& l, const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* v) {
  std::vector<TensorRecord> out;
  if (v)
    for (const fb::Tensor* t : *v) out.push_back(read_tensor(l, *t));
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

BertConfig read_config(const std::string& path, const fb::Config& c) {
  BertConfig cfg;
  cfg.vocab_size = c.vocab_size();
  cfg.hidden_size = c.hidden_size();
  cfg.num_hidden_layers = c.num_hidden_layers();
  cfg.num_attention_heads = c.num_attention_heads();
  cfg.intermediate_size = c.intermediate_size();
  if (c.hidden_act()) cfg.hidden_act = c.hidden_act()->str();
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
    fail("{}: {}", path, e.what());
  }
  return cfg;
}

TokenizerSpec read_tokenizer(const std::string& path, const fb::Tokenizer& t) {
  TokenizerSpec s;
  s.vocab = strings(t.vocab());
  if (s.vocab.empty()) fail("{}: tokenizer vocab is empty", path);
  s.do_lower_case = t.do_lower_case();
  switch (t.strip_accents()) {
    case fb::TriState::unset: break;
    case fb::TriState::true_: s.strip_accents = true; break;
    case fb::TriState::false_: s.strip_accents = false; break;
    default: fail("{}: tokenizer strip_accents has invalid code {}", path, static_cast<int>(t.strip_accents()));
  }
  s.tokenize_chinese_chars = t.tokenize_chinese_chars();
  s.max_input_chars_per_word = t.max_input_chars_per_word();
  if (t.unk_token()) s.unk_token = t.unk_token()->str();
  if (t.sep_token()) s.sep_token = t.sep_token()->str();
  if (t.pad_token()) s.pad_token = t.pad_token()->str();
  if (t.cls_token()) s.cls_token = t.cls_token()->str();
  if (t.mask_token()) s.mask_token = t.mask_token()->str();
  return s;
}

TrainingState read_training_state(const Layout& l, const fb::TrainingState& s) {
  TrainingState out;
  out.step = s.step();
  out.optimizer = str(s.optimizer());
  if (s.hyper())
    for (const fb::KeyNumber* kv : *s.hyper()) out.hyper[kv->key()->str()] = kv->value();
  out.schedule = pairs(s.schedule());
  out.rng_state = vec(s.rng_state());
  out.data_cursor = s.data_cursor();
  out.optimizer_tensors = read_tensors(l, s.optimizer_tensors());
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
  ModelFile f;
  f.checksums_verified_ = options.verify_checksums;
  f.file_ = std::make_shared<const MappedFile>(MappedFile::open(path, /*copy_on_write=*/true));
  const uint8_t* base = f.file_->data();
  const fb::Model* model = verify_buffer(path, base, f.file_->size());
  uint32_t buffer_size = 0;
  std::memcpy(&buffer_size, base, 4);
  if (const flatbuffers::Optional<uint32_t> stored = model->buffer_crc32c()) {
    f.buffer_checksummed_ = true;
    if (options.verify_checksums) {
      const uint32_t actual =
          buffer_crc(base, buffer_size + size_t(4), buffer_crc_field_offset(base));
      if (actual != *stored)
        fail("{}: checksum mismatch in the model's header (config, vocabulary, heads, metadata): "
             "CRC-32C {:08x}, the file says {:08x} (corrupted file; --no-verify-checksums loads it "
             "as it is)", path, actual, *stored);
    }
  }
  const Layout layout{path, base, f.file_->size(), buffer_size + uint64_t(4),
                      options.verify_checksums};

  ModelContents& m = f.contents_;
  m.config = read_config(path, *model->config());
  m.tokenizer = read_tokenizer(path, *model->tokenizer());
  m.tensors = read_tensors(layout, model->tensors());
  if (const fb::Heads* h = model->heads()) {
    m.heads.mlm = h->mlm();
    m.heads.nsp = h->nsp();
    m.heads.task = str(h->task());
    m.heads.labels = strings(h->labels());
    m.heads.kind = read_head_kind(path, h->kind());
  }
  try {
    m.heads.validate();
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
  m.heads.kind = m.heads.resolved_kind();
  if (const fb::TrainingState* s = model->training_state()) m.training_state = read_training_state(layout, *s);
  m.metadata = pairs(model->metadata());

  for (size_t i = 0; i < m.tensors.size(); ++i)
    if (!f.index_.emplace(m.tensors[i].name, i).second)
      fail("{}: tensor '{}' appears twice (corrupted file)", path, m.tensors[i].name);
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
