// write_model_file: FlatBuffer first, then the tensor bytes in 64-byte-aligned segments.
#include <set>
#include <unordered_map>

#include "bertrt_generated.h"
#include "core/atomic_file.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "io/buffer_crc.h"
#include "io/model_file.h"
#include "model/params.h"

namespace bertrt {

namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

uint64_t align_up(uint64_t x) { return (x + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment; }

// All segments in file order: the weights, then the optimizer moments.
std::vector<const TensorRecord*> all_segments(const ModelContents& m) {
  std::vector<const TensorRecord*> out;
  for (const TensorRecord& t : m.tensors) out.push_back(&t);
  if (m.training_state)
    for (const TensorRecord& t : m.training_state->optimizer_tensors) out.push_back(&t);
  return out;
}

void validate_contents(const std::string& path, const ModelContents& m) {
  try {
    m.config.validate();
    m.heads.validate();
    if (m.heads.embedding)
      m.heads.embedding->validate(m.config.hidden_size, m.config.max_position_embeddings);
  } catch (const Error& e) {
    fail("{}: cannot write: {}", path, e.what());
  }
  if (m.tokenizer.vocab.empty()) fail("{}: cannot write: tokenizer vocab is empty", path);
  std::set<std::string> names;
  for (const TensorRecord& t : m.tensors) {
    validate_tensor_record(t, path + ": cannot write");
    if (!names.insert(t.name).second) fail("{}: cannot write: tensor '{}' given twice", path, t.name);
  }
  if (m.training_state) {
    std::set<std::string> moments;
    for (const TensorRecord& t : m.training_state->optimizer_tensors) {
      validate_tensor_record(t, path + ": cannot write optimizer state");
      if (!moments.insert(t.name).second)
        fail("{}: cannot write: optimizer tensor '{}' given twice", path, t.name);
    }
  }
}

fb::DType to_fb(DType d) {
  switch (d) {
    case DType::f32: return fb::DType::f32;
    case DType::f16: return fb::DType::f16;
    case DType::bf16: return fb::DType::bf16;
    case DType::i8: return fb::DType::i8;
    case DType::i32: return fb::DType::i32;
  }
  fail("invalid dtype {}", static_cast<int>(d));
}

// Where segment i goes and the CRC-32C of its bytes (one per all_segments entry).
struct SegmentPlan {
  std::vector<uint64_t> offsets;
  std::vector<uint32_t> crcs;
};

Offset<fb::Tensor> build_tensor(FlatBufferBuilder& b, const TensorRecord& t, uint64_t offset,
                                uint32_t crc) {
  Offset<fb::Quantization> q = 0;
  if (!t.scales.empty()) q = fb::CreateQuantizationDirect(b, &t.scales, &t.zero_points, t.axis);
  return fb::CreateTensorDirect(b, t.name.c_str(), &t.shape, to_fb(t.dtype), offset, t.nbytes, q,
                                crc);
}

std::vector<Offset<fb::Tensor>> build_tensors(FlatBufferBuilder& b,
                                              const std::vector<TensorRecord>& ts,
                                              const SegmentPlan& plan, size_t first) {
  std::vector<Offset<fb::Tensor>> out;
  for (size_t i = 0; i < ts.size(); ++i)
    out.push_back(build_tensor(b, ts[i], plan.offsets[first + i], plan.crcs[first + i]));
  return out;
}

std::vector<Offset<fb::KeyValue>> build_pairs(FlatBufferBuilder& b, const std::map<std::string, std::string>& kv) {
  std::vector<Offset<fb::KeyValue>> out;
  for (const auto& [k, v] : kv) out.push_back(fb::CreateKeyValueDirect(b, k.c_str(), v.c_str()));
  return out;
}

Offset<fb::Config> build_config(FlatBufferBuilder& b, const BertConfig& c) {
  return fb::CreateConfigDirect(b, c.vocab_size, c.hidden_size, c.num_hidden_layers, c.num_attention_heads,
                                c.intermediate_size, c.hidden_act.c_str(), c.max_position_embeddings,
                                c.type_vocab_size, c.layer_norm_eps, c.pad_token_id, c.initializer_range,
                                c.hidden_dropout_prob, c.attention_probs_dropout_prob);
}

Offset<fb::Tokenizer> build_tokenizer(FlatBufferBuilder& b, const TokenizerSpec& t) {
  const auto vocab = b.CreateVectorOfStrings(t.vocab);
  const fb::TriState strip = !t.strip_accents ? fb::TriState::unset
                             : *t.strip_accents ? fb::TriState::true_
                                                : fb::TriState::false_;
  // Strings built one statement each: the order of function arguments is unspecified (GCC
  // evaluates them in another order on aarch64 than on x86-64), and the order of creation decides
  // the bytes of the file, which must not depend on the CPU.
  const auto unk = b.CreateString(t.unk_token);
  const auto sep = b.CreateString(t.sep_token);
  const auto pad = b.CreateString(t.pad_token);
  const auto cls = b.CreateString(t.cls_token);
  const auto mask = b.CreateString(t.mask_token);
  return fb::CreateTokenizer(b, vocab, t.do_lower_case, strip, t.tokenize_chinese_chars, t.max_input_chars_per_word,
                             unk, sep, pad, cls, mask);
}

Offset<fb::TrainingState> build_training_state(FlatBufferBuilder& b, const TrainingState& s,
                                               const SegmentPlan& plan, size_t first) {
  std::vector<Offset<fb::KeyNumber>> hyper;
  for (const auto& [k, v] : s.hyper) hyper.push_back(fb::CreateKeyNumberDirect(b, k.c_str(), v));
  const auto schedule = build_pairs(b, s.schedule);
  const auto moments = build_tensors(b, s.optimizer_tensors, plan, first);
  return fb::CreateTrainingStateDirect(b, s.step, s.optimizer.c_str(), &hyper, &schedule,
                                       &s.rng_state, s.data_cursor, &moments);
}

fb::HeadKind head_kind(HeadKind k) {
  switch (k) {
    case HeadKind::kNone: return fb::HeadKind::none;
    case HeadKind::kSequenceClassification: return fb::HeadKind::sequence_classification;
    case HeadKind::kRegression: return fb::HeadKind::regression;
    case HeadKind::kTokenClassification: return fb::HeadKind::token_classification;
    case HeadKind::kQuestionAnswering: return fb::HeadKind::question_answering;
  }
  return fb::HeadKind::none;
}

Offset<fb::EmbeddingHead> build_embedding(FlatBufferBuilder& b, const EmbeddingConfig& e) {
  const PoolingConfig& p = e.pooling;
  const auto pooling = fb::CreatePooling(b, p.cls_token, p.max_tokens, p.mean_tokens,
                                         p.mean_sqrt_len_tokens, p.weightedmean_tokens,
                                         p.lasttoken, p.include_prompt);
  std::vector<Offset<fb::DenseModule>> dense;
  for (const DenseConfig& d : e.dense) {  // strings one statement each (see build_tokenizer)
    const auto path = b.CreateString(d.path);
    const auto act = b.CreateString(d.activation_function);
    dense.push_back(fb::CreateDenseModule(b, path, d.in_features, d.out_features, d.bias, act));
  }
  const auto dense_vec = b.CreateVector(dense);
  std::vector<Offset<fb::KeyValue>> prompts;
  for (const auto& [name, text] : e.prompts) {
    const auto k = b.CreateString(name);
    const auto v = b.CreateString(text);
    prompts.push_back(fb::CreateKeyValue(b, k, v));
  }
  const auto prompts_vec = b.CreateVector(prompts);
  const auto default_prompt = b.CreateString(e.default_prompt_name);
  const auto similarity = b.CreateString(e.similarity_fn_name);
  return fb::CreateEmbeddingHead(b, pooling, dense_vec, e.normalize, e.max_seq_length,
                                 e.do_lower_case, prompts_vec, default_prompt, similarity);
}

// The size-prefixed FlatBuffer for `m` with the segments placed as `plan` says.
flatbuffers::DetachedBuffer build_buffer(const ModelContents& m, const SegmentPlan& plan) {
  FlatBufferBuilder b(1 << 16);
  b.ForceDefaults(true);  // every scalar stored: the buffer size does not depend on the offsets' values
  const auto config = build_config(b, m.config);
  const auto tokenizer = build_tokenizer(b, m.tokenizer);
  const auto tensors = build_tensors(b, m.tensors, plan, 0);
  const auto task = b.CreateString(m.heads.task);  // one a statement: see build_tokenizer
  const auto labels = b.CreateVectorOfStrings(m.heads.labels);
  Offset<fb::EmbeddingHead> embedding = 0;
  if (m.heads.embedding) embedding = build_embedding(b, *m.heads.embedding);
  const auto heads = fb::CreateHeads(b, m.heads.mlm, m.heads.nsp, task, labels,
                                     head_kind(m.heads.resolved_kind()), embedding);
  Offset<fb::TrainingState> state = 0;
  if (m.training_state) state = build_training_state(b, *m.training_state, plan, m.tensors.size());
  const auto metadata = build_pairs(b, m.metadata);
  // buffer_crc32c: 0 here, the checksum patched in by the caller (io/buffer_crc.h).
  const auto root = fb::CreateModelDirect(b, kModelFormatVersion, config, tokenizer, &tensors,
                                          heads, state, &metadata, 0u);
  fb::FinishSizePrefixedModelBuffer(b, root);
  return b.Release();
}

// The order segments are placed in (indices into all_segments): first the f32 tensors of the
// model's parameter layout, in layout order, so that their bytes lie exactly as the model's
// parameter arena lays them out (both pad every tensor to 64 bytes) and a loader can use them in
// place (io/model_io.cpp); then every other segment in the order given.
std::vector<size_t> placement_order(const ModelContents& m,
                                    const std::vector<const TensorRecord*>& segs) {
  std::vector<size_t> order;
  std::vector<bool> placed(segs.size(), false);
  std::unordered_map<std::string, size_t> by_name;
  for (size_t i = 0; i < m.tensors.size(); ++i) by_name.emplace(m.tensors[i].name, i);
  const ParamLayout layout = bert_param_layout(m.config, m.heads);
  for (const ParamInfo& p : layout.params()) {
    const auto it = by_name.find(p.name);
    if (it == by_name.end()) continue;
    const TensorRecord& t = m.tensors[it->second];
    if (t.dtype != DType::f32 || t.nbytes != p.numel * sizeof(float)) continue;
    order.push_back(it->second);
    placed[it->second] = true;
  }
  for (size_t i = 0; i < segs.size(); ++i)
    if (!placed[i]) order.push_back(i);
  return order;
}

// Segments placed in `order` after the buffer, each starting on a 64-byte boundary; offsets are
// indexed like segs.
std::vector<uint64_t> plan_segments(const std::vector<const TensorRecord*>& segs,
                                    const std::vector<size_t>& order, uint64_t buffer_size) {
  std::vector<uint64_t> offsets(segs.size(), 0);
  uint64_t pos = align_up(buffer_size);
  for (size_t i : order) {
    offsets[i] = pos;
    pos = align_up(pos + segs[i]->nbytes);
  }
  return offsets;
}

}  // namespace

void write_model_file(const std::string& path, const ModelContents& m) {
  validate_contents(path, m);
  const std::vector<const TensorRecord*> segs = all_segments(m);
  // Every segment's checksum is stored (the loader verifies it); computed from the caller's bytes,
  // never copied from a record read elsewhere, so a corrupted input is not blessed.
  SegmentPlan plan;
  plan.offsets.assign(segs.size(), 0);
  for (const TensorRecord* t : segs) plan.crcs.push_back(crc32c::value(t->data, t->nbytes));
  // Two passes: the buffer's size fixes where the segments start, and (with ForceDefaults) the
  // offsets' values do not change that size; loop in case they ever do.
  const std::vector<size_t> order = placement_order(m, segs);
  flatbuffers::DetachedBuffer buf = build_buffer(m, plan);
  for (int pass = 0;; ++pass) {
    plan.offsets = plan_segments(segs, order, buf.size());
    flatbuffers::DetachedBuffer next = build_buffer(m, plan);
    const bool stable = next.size() == buf.size();
    buf = std::move(next);
    if (stable) break;
    if (pass == 3) fail("{}: internal error: model file layout did not converge", path);
  }

  // The buffer's own checksum: the config, vocabulary and metadata the segments' CRCs miss.
  const size_t field = buffer_crc_field_offset(buf.data());
  if (field == 0) fail("{}: internal error: the model buffer has no buffer_crc32c field", path);
  flatbuffers::WriteScalar(buf.data() + field, buffer_crc(buf.data(), buf.size(), field));

  AtomicFile out(path);
  out.write(buf.data(), buf.size());
  for (size_t i : order) {
    out.write_zeros(plan.offsets[i] - out.written());
    out.write(segs[i]->data, segs[i]->nbytes);
  }
  out.commit();
}

}  // namespace bertrt
