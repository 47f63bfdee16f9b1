// The loader against hostile .brt files: valid FlatBuffers with correct (recomputed) checksums
// whose content attacks the loader (tests/hostile/brt_edit.h edits an honest file as an attacker
// would). Each must be refused with a message naming the file, the tensor or field and the rule,
// in time and memory bounded by the file: the attacks here took seconds to minutes and gigabytes
// before. The same through the C API's bertrt_model_load_buffer. The CLI runs the generator's
// files in tests/e2e/hostile_model_test.sh.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "bertrt/bertrt.h"
#include "brt_edit.h"
#include "core/error.h"
#include "io/config_check.h"
#include "io/model_io.h"
#include "tasks/task_definition.h"
#include "test_util.h"

namespace bertrt {
namespace {

using hostile::BrtParts;
using hostile::PackOptions;
using test::TempDir;

long max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// An honest 1-layer BERT (H 64, I 256, vocab 6) with an SST-2 head, as bertrt writes it.
struct Honest {
  std::vector<std::vector<float>> store;
  ModelContents c;
  void add(const std::string& name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    store.emplace_back(n);
    for (size_t i = 0; i < n; ++i) store.back()[i] = 0.01f * float(int(i % 13) - 6);
    TensorRecord t;
    t.name = name;
    t.shape = std::move(shape);
    t.data = reinterpret_cast<const uint8_t*>(store.back().data());
    t.nbytes = n * sizeof(float);
    c.tensors.push_back(std::move(t));
  }
  Honest() {
    store.reserve(64);
    const int64_t H = 64, I = 256;
    c.config.vocab_size = 6;
    c.config.hidden_size = H;
    c.config.num_hidden_layers = 1;
    c.config.num_attention_heads = 1;
    c.config.intermediate_size = I;
    c.config.max_position_embeddings = 8;
    c.tokenizer.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"};
    c.heads.kind = HeadKind::kSequenceClassification;
    c.heads.labels = {"0", "1"};
    c.heads.task = "sst2";
    TaskDefinition task = make_task_definition("sst2");
    task.max_seq_length = 8;
    c.metadata["task"] = task_definition_json(task);
    add("bert.embeddings.word_embeddings.weight", {6, H});
    add("bert.embeddings.position_embeddings.weight", {8, H});
    add("bert.embeddings.token_type_embeddings.weight", {2, H});
    add("bert.embeddings.LayerNorm.weight", {H});
    add("bert.embeddings.LayerNorm.bias", {H});
    const std::string p = "bert.encoder.layer.0.";
    for (const char* l : {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense"}) {
      add(p + l + ".weight", {H, H});
      add(p + l + ".bias", {H});
    }
    add(p + "attention.output.LayerNorm.weight", {H});
    add(p + "attention.output.LayerNorm.bias", {H});
    add(p + "intermediate.dense.weight", {I, H});
    add(p + "intermediate.dense.bias", {I});
    add(p + "output.dense.weight", {H, I});
    add(p + "output.dense.bias", {H});
    add(p + "output.LayerNorm.weight", {H});
    add(p + "output.LayerNorm.bias", {H});
    add("bert.pooler.dense.weight", {H, H});
    add("bert.pooler.dense.bias", {H});
    add("classifier.weight", {2, H});
    add("classifier.bias", {2});
  }
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// The honest file's parts, to edit.
BrtParts honest_parts(TempDir& dir) {
  const Honest h;
  write_model_file(dir.file("honest.brt"), h.c);
  auto p = hostile::take_apart(read_all(dir.file("honest.brt")));
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

// The honest model as a sentence-embedding one: no classifier, no task record, cls+mean pooling
// (128 wide, prompt excluded), Dense 2_Dense [8, 128] (Tanh, bias) and 3_Dense [4, 8] (Identity,
// no bias), Normalize, two prompts with a default, dot similarity, max_seq_length 6, lower-cased.
EmbeddingConfig honest_embedding() {
  EmbeddingConfig e;
  e.pooling.cls_token = e.pooling.mean_tokens = true;
  e.pooling.include_prompt = false;
  e.dense = {{"2_Dense", 128, 8, true, "torch.nn.modules.activation.Tanh"},
             {"3_Dense", 8, 4, false, "torch.nn.modules.linear.Identity"}};
  e.normalize = true;
  e.max_seq_length = 6;
  e.do_lower_case = true;
  e.prompts = {{"query", "query: "}, {"passage", ""}};
  e.default_prompt_name = "query";
  e.similarity_fn_name = "dot";
  return e;
}

BrtParts embedding_parts(TempDir& dir) {
  Honest h;
  h.c.tensors.erase(h.c.tensors.end() - 2, h.c.tensors.end());  // classifier.weight, .bias
  h.c.heads = HeadsConfig{};
  h.c.metadata.clear();
  h.c.heads.embedding = honest_embedding();
  h.add("2_Dense.linear.weight", {8, 128});
  h.add("2_Dense.linear.bias", {8});
  h.add("3_Dense.linear.weight", {4, 8});
  write_model_file(dir.file("honest_embedding.brt"), h.c);
  auto p = hostile::take_apart(read_all(dir.file("honest_embedding.brt")));
  EXPECT_TRUE(p.has_value());
  return std::move(*p);
}

std::string save(TempDir& dir, const std::string& name, const BrtParts& p, PackOptions o = {}) {
  const std::string path = dir.file(name + ".brt");
  write_all(path, hostile::put_together(p, o));
  return path;
}

fb::TensorT& tensor(BrtParts& p, const std::string& name) {
  fb::TensorT* t = hostile::find_tensor(p, name);
  EXPECT_NE(t, nullptr) << name;
  return *t;
}

// `fn` throws bertrt::Error naming `path` and each needle, within `seconds`.
void expect_refused(const std::function<void()>& fn, const std::string& path,
                    const std::vector<std::string>& needles, double seconds = 1.0) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    fn();
    ADD_FAILURE() << path << ": loaded, expected an error containing " << needles[0];
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, seconds) << path;
}

void expect_open_refused(const std::string& path, const std::vector<std::string>& needles,
                         OpenOptions o = {}) {
  expect_refused([&] { ModelFile::open(path, o); }, path, needles);
}

TEST(HostileLoad, TheToolsRoundTripLoads) {
  TempDir dir;
  const BrtParts p = honest_parts(dir);
  const std::string path = save(dir, "again", p);
  const LoadedModel m = load_model(path);
  EXPECT_EQ(m.model->heads().labels.size(), 2u);
  EXPECT_EQ(ModelFile::open(path).checksummed_segments(), ModelFile::open(path).segments());
}

TEST(HostileLoad, AliasedSegmentsAreRefusedInLinearithmicTime) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  const auto word = tensor(p, "bert.embeddings.word_embeddings.weight");
  for (int i = 0; i < 20000; ++i) {
    auto t = std::make_unique<fb::TensorT>(word);
    t->name = "alias." + std::to_string(i);
    p.model.tensors.push_back(std::move(t));
  }
  const std::string path = save(dir, "alias", p);
  expect_open_refused(path, {"overlaps tensor", "each byte of the data belongs to one tensor"});
  // Overlapping by one float, not aliased whole.
  BrtParts q = honest_parts(dir);
  tensor(q, "classifier.bias").offset = tensor(q, "classifier.weight").offset + 64;
  tensor(q, "classifier.bias").size = 8;
  expect_open_refused(save(dir, "overlap", q), {"overlaps tensor 'classifier.weight'"});
}

TEST(HostileLoad, DataOutsideEverySegmentIsRefused) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  p.data += std::string(100, 'X');
  expect_open_refused(save(dir, "trailing", p), {"at the end of the file belong to no tensor"});
  BrtParts q = honest_parts(dir);
  q.data += std::string(20, 'X');  // under 64 bytes, but not zero
  expect_open_refused(save(dir, "trailing_short", q), {"is not zero padding"});
}

TEST(HostileLoad, ManyLabelsAreCheckedByHashing) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  p.model.heads->labels.clear();
  for (int i = 0; i < 99999; ++i) p.model.heads->labels.push_back("L" + std::to_string(i));
  p.model.heads->labels.push_back("L7");  // the quadratic check took 6.75 s for 100,000
  expect_open_refused(save(dir, "labels", p), {"heads: label 'L7' appears twice"});
  for (int i = 0; i < 100001; ++i) p.model.heads->labels.push_back("M" + std::to_string(i));
  expect_open_refused(save(dir, "labels2", p), {"heads.labels: 200001 entries, more than the 100000 allowed"});
}

TEST(HostileLoad, SharedStringsCannotDecodeToGigabytes) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  p.model.config->vocab_size = 40000;
  p.model.tokenizer->vocab.assign(40000, std::string(1000, 't'));  // 40 MB decoded, 1 KB stored
  PackOptions shared;
  shared.share_strings = true;
  const long before = max_rss_kb();
  const std::string path = save(dir, "vocab", p, shared);
  expect_open_refused(path, {"tokenizer.vocab: the header decodes to more than 8 times"});
  BrtParts q = honest_parts(dir);
  for (int i = 0; i < 5000; ++i) {
    auto kv = std::make_unique<fb::KeyValueT>();
    kv->key = "k" + std::to_string(i);
    kv->value = "v";
    q.model.metadata.push_back(std::move(kv));
  }
  expect_open_refused(save(dir, "metadata", q, shared), {"metadata: 5001 entries, more than the 4096 allowed"});
  BrtParts r = honest_parts(dir);
  r.model.metadata[0]->value.assign(2 << 20, 'v');
  expect_open_refused(save(dir, "big_value", r), {"metadata 'task': 2097152 bytes, longer than the 1048576-byte limit"});
  EXPECT_LT(max_rss_kb() - before, 200 * 1024);  // the files' own strings: 40 MB in this process
}

TEST(HostileLoad, NonFiniteValuesAreNamedByTensorAndElement) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  {
    BrtParts p = honest_parts(dir);
    const auto& t = tensor(p, "bert.encoder.layer.0.output.LayerNorm.weight");
    std::memcpy(p.data.data() + t.offset + 4 * 33, &nan, 4);
    const std::string path = save(dir, "nan", p);
    expect_open_refused(path, {"tensor 'bert.encoder.layer.0.output.LayerNorm.weight': element 33 "
                               "is not finite (f32 NaN or infinity)"});
    // Without the checksums the values are still checked.
    expect_open_refused(path, {"element 33 is not finite"}, OpenOptions{false});
  }
  {  // f16 and bf16 storage: an infinity and a NaN
    BrtParts p = honest_parts(dir);
    auto& b = tensor(p, "classifier.bias");
    const uint16_t f16[2] = {0x3c00, 0xfc00}, bf16[2] = {0x3f80, 0x7fc0};
    b.dtype = fb::DType::f16;
    b.size = 4;
    std::memset(p.data.data() + b.offset, 0, 8);  // its other 4 bytes: zero padding now
    std::memcpy(p.data.data() + b.offset, f16, 4);
    expect_open_refused(save(dir, "f16", p), {"tensor 'classifier.bias': element 1 is not finite (f16"});
    b.dtype = fb::DType::bf16;
    std::memcpy(p.data.data() + b.offset, bf16, 4);
    expect_open_refused(save(dir, "bf16", p), {"tensor 'classifier.bias': element 1 is not finite (bf16"});
  }
}

TEST(HostileLoad, QuantizationRecordsMustDequantizeToFiniteValues) {
  TempDir dir;
  auto int8_parts = [&](float scale, int64_t zero_point) {
    BrtParts p = honest_parts(dir);
    auto& w = tensor(p, "classifier.weight");  // [2, 64] as i8 with per-row scales
    w.dtype = fb::DType::i8;
    w.size = 128;
    p.data.resize(w.offset);  // the last two segments (weight, bias) replaced
    w.offset = hostile::append_segment(p, std::string(128, '\x05'));
    auto& b = tensor(p, "classifier.bias");
    b.offset = hostile::append_segment(p, std::string(8, '\0'));
    w.quantization = std::make_unique<fb::QuantizationT>();
    w.quantization->axis = 0;
    w.quantization->scales = {0.01f, scale};
    w.quantization->zero_points = {0, zero_point};
    return p;
  };
  EXPECT_NO_THROW(ModelFile::open(save(dir, "ok", int8_parts(0.02f, 3))));
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                          3e38f, 0.0f, -1.0f}) {
    const std::string path = save(dir, "scale", int8_parts(bad, 0));
    expect_open_refused(path, {"tensor 'classifier.weight': quantization scale 1 is",
                               "scales must be finite, positive and at most"});
  }
  expect_open_refused(save(dir, "zp", int8_parts(0.02f, std::numeric_limits<int64_t>::min())),
                      {"zero point 1 is -9223372036854775808, outside the i8 range [-128, 127]"});
  expect_open_refused(save(dir, "zp2", int8_parts(0.02f, 128)), {"zero point 1 is 128"});
}

TEST(HostileLoad, ConfigFloatsInSaneBounds) {
  TempDir dir;
  for (const float eps : {std::numeric_limits<float>::infinity(), 1e30f, 0.0f, -1e-12f,
                          std::numeric_limits<float>::quiet_NaN()}) {
    BrtParts p = honest_parts(dir);
    p.model.config->layer_norm_eps = eps;
    expect_open_refused(save(dir, "eps", p), {"config: layer_norm_eps", "is outside (0, 0.1]"});
  }
  BrtParts p = honest_parts(dir);
  p.model.config->layer_norm_eps = 1e-5f;  // RoBERTa's, still fine
  EXPECT_NO_THROW(load_model(save(dir, "eps_ok", p)));
  p.model.config->attention_probs_dropout_prob = 1.0f;
  expect_open_refused(save(dir, "dropout", p), {"attention_probs_dropout_prob 1 is outside [0, 1)"});
}

TEST(HostileLoad, LabelsAndTaskRecordsAreCheckedAtLoad) {
  TempDir dir;
  {
    BrtParts p = honest_parts(dir);
    p.model.heads->labels[1] = "pos\n0\tforged";
    expect_open_refused(save(dir, "label", p), {"heads: label 1 holds a control character at byte 3"});
  }
  auto with_task = [&](const std::function<void(TaskDefinition&)>& edit) {
    BrtParts p = honest_parts(dir);
    TaskDefinition t = make_task_definition("sst2");
    t.max_seq_length = 8;
    edit(t);
    for (auto& kv : p.model.metadata)
      if (kv->key == "task") kv->value = task_definition_json(t);
    const std::string path = save(dir, "task", p);
    const ModelFile f = ModelFile::open(path);
    return std::make_pair(path, std::move(f));
  };
  auto check = [](const std::pair<std::string, ModelFile>& pf) {
    const ModelContents& c = pf.second.contents();
    check_task_record(c.metadata, c.heads, c.config, pf.first);
  };
  {
    const auto pf = with_task([](TaskDefinition& t) { t.labels = {"0", "1", "2"}; });
    expect_refused([&] { check(pf); }, pf.first, {"metadata 'task' (the task record) cannot be used",
                                                  "not task sst2's"});
  }
  {
    const auto pf = with_task([](TaskDefinition& t) { t.max_seq_length = 9; });  // positions: 8
    expect_refused([&] { check(pf); }, pf.first, {"its max_seq_length 9 is outside [3, max_position_embeddings 8]"});
  }
  {  // a SQuAD record's numbers are checked as the CLI's flags are
    TaskDefinition squad = make_task_definition("squad");
    squad.squad_answers.n_best = -1;
    HeadsConfig qa;
    qa.kind = HeadKind::kQuestionAnswering;
    BertConfig cfg;
    EXPECT_EQ(task_record_problem(squad, qa, cfg), "its squad n_best -1 must be ≥ 1 (as --n-best is)");
    squad.squad_answers.n_best = 20;
    squad.squad_answers.max_answer_length = 0;
    EXPECT_EQ(task_record_problem(squad, qa, cfg),
              "its squad max_answer_length 0 must be ≥ 1 (as --max-answer-length is)");
    squad.squad_answers.max_answer_length = 30;
    EXPECT_EQ(task_record_problem(squad, qa, cfg), "");
  }
}

TEST(HostileLoad, TheToolsKeepTheEmbeddingHead) {
  TempDir dir;
  const std::string path = save(dir, "again", embedding_parts(dir));
  const LoadedModel m = load_model(path);
  ASSERT_TRUE(m.model->heads().embedding.has_value());
  const EmbeddingConfig& got = *m.model->heads().embedding;
  const EmbeddingConfig want = honest_embedding();
  EXPECT_EQ(got.pooling.mode_string(), "cls+mean");
  EXPECT_FALSE(got.pooling.include_prompt);
  ASSERT_EQ(got.dense.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got.dense[i].path, want.dense[i].path);
    EXPECT_EQ(got.dense[i].in_features, want.dense[i].in_features);
    EXPECT_EQ(got.dense[i].out_features, want.dense[i].out_features);
    EXPECT_EQ(got.dense[i].bias, want.dense[i].bias);
    EXPECT_EQ(got.dense[i].activation_function, want.dense[i].activation_function);
  }
  EXPECT_TRUE(got.normalize);
  EXPECT_EQ(got.max_seq_length, 6);
  EXPECT_TRUE(got.do_lower_case);
  EXPECT_EQ(got.prompts, want.prompts);
  EXPECT_EQ(got.default_prompt_name, "query");
  EXPECT_EQ(got.similarity_fn_name, "dot");
}

// Each head below contradicts itself, the config or its tensors, under checksums that are right:
// refused at load with the field and the rule, never a crash or an allocation the file declares.
TEST(HostileLoad, AnInconsistentEmbeddingHeadIsRefusedNamingTheField) {
  TempDir dir;
  const BrtParts honest = embedding_parts(dir);
  struct Case {
    const char* name;
    std::function<void(BrtParts&)> edit;
    std::vector<std::string> needles;
  };
  auto head = [](BrtParts& p) -> fb::EmbeddingHeadT& { return *p.model.heads->embedding; };
  auto prompt = [](const std::string& k, const std::string& v) {
    auto kv = std::make_unique<fb::KeyValueT>();
    kv->key = k;
    kv->value = v;
    return kv;
  };
  const std::vector<Case> cases = {
      {"no_mode", [&](BrtParts& p) { head(p).pooling->cls_token = head(p).pooling->mean_tokens = false; },
       {"embedding head: the pooling has no mode"}},
      {"in_features", [&](BrtParts& p) { head(p).dense[0]->in_features = 64; },
       {"embedding head: 2_Dense in_features is 64, but the vector before it has 128 dimensions"}},
      {"chain", [&](BrtParts& p) { head(p).dense[1]->in_features = 9; },
       {"embedding head: 3_Dense in_features is 9, but the vector before it has 8 dimensions"}},
      {"out_negative", [&](BrtParts& p) { head(p).dense[0]->out_features = -1; },
       {"embedding head: 2_Dense out_features -1 is outside [1, 1048576]"}},
      {"out_zero", [&](BrtParts& p) { head(p).dense[1]->out_features = 0; },
       {"embedding head: 3_Dense out_features 0 is outside [1, 1048576]"}},
      {"activation", [&](BrtParts& p) { head(p).dense[1]->activation_function = "torch.nn.modules.activation.Softmax"; },
       {"embedding head: 3_Dense activation_function 'torch.nn.modules.activation.Softmax' is not one of"}},
      {"path_twice", [&](BrtParts& p) { head(p).dense[1]->path = "2_Dense"; },
       {"embedding head: dense 1 needs a path (folder name) of its own, got '2_Dense'"}},
      {"dense_65", [&](BrtParts& p) {
         for (int i = 0; i < 63; ++i) head(p).dense.push_back(std::make_unique<fb::DenseModuleT>(*head(p).dense[1]));
       }, {"heads.embedding.dense: 65 modules, more than the 64 allowed"}},
      {"max_seq_length", [&](BrtParts& p) { head(p).max_seq_length = 9; },
       {"embedding head: max_seq_length 9 is outside [0, max_position_embeddings 8]"}},
      {"max_seq_length_negative", [&](BrtParts& p) { head(p).max_seq_length = -1; },
       {"embedding head: max_seq_length -1 is outside [0, max_position_embeddings 8]"}},
      {"prompt_twice", [&](BrtParts& p) { head(p).prompts.push_back(prompt("query", "again: ")); },
       {"embedding head: prompt 'query' appears twice"}},
      {"prompt_huge", [&](BrtParts& p) { head(p).prompts.push_back(prompt("long", std::string(2 << 20, 'p'))); },
       {"heads.embedding.prompts value: 2097152 bytes, longer than the 1048576-byte limit"}},
      {"default_prompt", [&](BrtParts& p) { head(p).default_prompt_name = "document"; },
       {"embedding head: default_prompt_name 'document' is not one of the prompts"}},
      {"similarity", [&](BrtParts& p) { head(p).similarity_fn_name = "cos_sim"; },
       {"embedding head: similarity_fn_name 'cos_sim' is not cosine, dot, euclidean or manhattan"}},
      {"pooled_width", [&](BrtParts& p) {  // 2 modes × 2^30 overflowed an int
         p.model.config->hidden_size = 1 << 30;
         p.model.config->num_attention_heads = 1;
       }, {"embedding head: the pooled vector has 2147483648 dimensions (2 pooling modes × hidden_size 1073741824), more than 1048576"}},
      {"bias_missing", [&](BrtParts& p) { head(p).dense[1]->bias = true; },
       {"tensor '3_Dense.linear.bias' is missing (the config and heads need it)"}},
      {"weight_shape", [&](BrtParts& p) {
         std::swap(tensor(p, "3_Dense.linear.weight").shape[0], tensor(p, "3_Dense.linear.weight").shape[1]);
       }, {"tensor '3_Dense.linear.weight' has shape [8, 4], expected [4, 8]"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BrtParts p{honest.model, honest.data};
    c.edit(p);
    const std::string path = save(dir, c.name, p);
    expect_refused([&] { load_model(path); }, path, c.needles);
  }
}

// A Dense of 2^20 outputs and one of 2^20 × 2^20 after it (4 TB of f32) is refused by the tensor
// check, which load_model runs before BertModel allocates what the head declares.
TEST(HostileLoad, AHugeDenseIsRefusedBeforeTheModelAllocates) {
  TempDir dir;
  const long before = max_rss_kb();
  for (const bool tensors : {false, true}) {
    BrtParts p = embedding_parts(dir);
    fb::EmbeddingHeadT& e = *p.model.heads->embedding;
    e.dense[0]->out_features = 1 << 20;
    e.dense[1]->in_features = e.dense[1]->out_features = 1 << 20;
    if (!tensors)
      p.model.tensors.erase(std::remove_if(p.model.tensors.begin(), p.model.tensors.end(),
                                           [](const auto& t) { return t->name.rfind("2_Dense.", 0) == 0; }),
                            p.model.tensors.end());
    hostile::compact(p);
    const std::string path = save(dir, tensors ? "huge_dense_small_tensors" : "huge_dense", p);
    expect_refused([&] { load_model(path); }, path,
                   {tensors ? "tensor '2_Dense.linear.weight' has shape [8, 128], expected [1048576, 128]"
                            : "tensor '2_Dense.linear.weight' is missing (the config and heads need it)"});
  }
  EXPECT_LT(max_rss_kb() - before, 100 * 1024);  // a model of these sizes: terabytes
}

TEST(HostileLoad, ChecksumsAreRequiredUnlessSkipped) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  for (auto& t : p.model.tensors) t->crc32c = flatbuffers::nullopt;
  p.model.buffer_crc32c = flatbuffers::nullopt;
  std::swap(p.model.tokenizer->vocab[4], p.model.tokenizer->vocab[5]);  // unnoticed before
  const std::string path = save(dir, "none", p);
  expect_open_refused(path, {"the model's header carries no checksum, and checksums are required",
                             "bertrt-convert --no-verify-checksums " + path + " -o NEW.brt",
                             "--no-verify-checksums"});
  EXPECT_EQ(ModelFile::open(path, OpenOptions{false}).contents().tokenizer.vocab[4], "a");
  BrtParts q = honest_parts(dir);
  tensor(q, "classifier.bias").crc32c = flatbuffers::nullopt;
  expect_open_refused(save(dir, "one", q), {"tensor 'classifier.bias' carries no checksum"});
}

TEST(HostileLoad, TheTrainingStateIsReadOnlyWhenAsked) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  p.model.training_state = std::make_unique<fb::TrainingStateT>();
  const std::string nan(8, '\xff');  // two NaNs
  p.model.training_state->optimizer_tensors.push_back(hostile::make_tensor(
      "exp_avg.classifier.bias", {2}, fb::DType::f32, hostile::append_segment(p, nan), 8));
  const std::string path = save(dir, "state", p);
  const ModelFile f = ModelFile::open(path);  // predict, eval: the moments are not read
  EXPECT_TRUE(f.has_training_state());
  EXPECT_FALSE(f.contents().training_state.has_value());
  OpenOptions resume;
  resume.training_state = true;
  expect_open_refused(path, {"optimizer tensor 'exp_avg.classifier.bias': element 0 is not finite"}, resume);
  // Its segments' places are checked either way: an alias of a weight is refused by every command.
  p.model.training_state->optimizer_tensors[0]->offset = tensor(p, "classifier.bias").offset;
  expect_open_refused(save(dir, "state_alias", p), {"overlaps"});
}

#if defined(__SANITIZE_ADDRESS__)
#define BERTRT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BERTRT_TEST_ASAN 1
#endif
#endif

// The address space this process has mapped (VmSize), in bytes.
uint64_t mapped_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

// Out of memory while a file's model is built is said as such, naming the file (the CLI's
// catch-all suggested a smaller --batch-size, which cannot help). A forked child loads a 64 MB
// model under an address-space limit that holds the file's mapping but not the model's arena
// too; only the child's thread runs there, so no library thread meets the limit.
TEST(HostileLoad, OutOfMemoryWhileLoadingNamesTheFile) {
#ifdef BERTRT_TEST_ASAN
  GTEST_SKIP() << "ASan reserves terabytes of shadow memory: an address-space limit cannot work";
#else
  if (test::emulated())
    GTEST_SKIP() << "qemu-user maps the guest's memory itself: the guest's RLIMIT_AS does not bound it";
  TempDir dir;
  Honest h;
  const int64_t V = 262144, H = 64;  // a 64 MB word-embedding table
  h.c.config.vocab_size = int(V);
  h.store.emplace_back(size_t(V * H), 0.01f);
  h.c.tensors[0].shape = {V, H};
  h.c.tensors[0].data = reinterpret_cast<const uint8_t*>(h.store.back().data());
  h.c.tensors[0].nbytes = size_t(V * H) * sizeof(float);
  const std::string path = dir.file("big.brt");
  write_model_file(path, h.c);
  EXPECT_NO_THROW(load_model(path));  // without the limit it loads
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::string msg = "loaded";
    const uint64_t file = uint64_t(V * H) * sizeof(float);
    const rlimit lim{mapped_bytes() + file + file / 2, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &lim) != 0) msg = "setrlimit failed";
    else {
      try {
        load_model(path);
      } catch (const std::exception& e) {
        msg = e.what();
      }
    }
    (void)!write(fds[1], msg.data(), msg.size());
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(msg.rfind(path + ": out of memory while loading the model: it needs more memory than "
                      "this device has free (the file is 67.", 0), 0u) << msg;
  EXPECT_EQ(msg.find("batch"), std::string::npos) << msg;
#endif
}

TEST(HostileLoad, TheCApiBufferLoaderRefusesTheSame) {
  TempDir dir;
  BrtParts p = honest_parts(dir);
  const std::string honest = hostile::put_together(p);
  bertrt_model* m = nullptr;
  ASSERT_EQ(bertrt_model_load_buffer(honest.data(), honest.size(), nullptr, &m), BERTRT_OK)
      << bertrt_last_error();
  bertrt_model_free(m);
  const auto word = tensor(p, "bert.embeddings.word_embeddings.weight");
  for (int i = 0; i < 20000; ++i) {
    auto t = std::make_unique<fb::TensorT>(word);
    t->name = "alias." + std::to_string(i);
    p.model.tensors.push_back(std::move(t));
  }
  const std::string bad = hostile::put_together(p);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(bertrt_model_load_buffer(bad.data(), bad.size(), nullptr, &m), BERTRT_E_MODEL);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  const std::string msg = bertrt_last_error();
  EXPECT_NE(msg.find("<buffer>: tensor 'alias."), std::string::npos) << msg;
  EXPECT_NE(msg.find("overlaps"), std::string::npos) << msg;
  // A task record that the head does not match: refused at load, no longer ignored.
  BrtParts q = honest_parts(dir);
  for (auto& kv : q.model.metadata)
    if (kv->key == "task") kv->value = R"({"name":"sst2","head":"sequence_classification","labels":["0","1","2"],"pair":false,"max_seq_length":8})";
  const std::string rec = hostile::put_together(q);
  EXPECT_EQ(bertrt_model_load_buffer(rec.data(), rec.size(), nullptr, &m), BERTRT_E_MODEL);
  EXPECT_NE(std::string(bertrt_last_error()).find("<buffer>: metadata 'task'"), std::string::npos)
      << bertrt_last_error();
}

}  // namespace
}  // namespace bertrt
