// The TF1 checkpoint reader of bertrt-convert: the SSTable and
// tensor-bundle readers on real files written by TensorFlow (../shared/ckpt, see its README),
// the original→HF BERT name mapping on real Google/fine-tuned indexes, and one test per class of
// malformed input, each made by copying a real file into a TempDir and mutating it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "convert/sstable.h"
#include "convert/tf_bert_names.h"
#include "convert/tf_bundle.h"
#include "convert/varint.h"
#include "core/crc32c.h"
#include "core/error.h"
#include "test_util.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string ckpt() { return test::shared_dir() + "/ckpt"; }
std::string tiny_dir() { return ckpt() + "/tf1/keras-bert-tiny"; }
std::string iris_dir() { return ckpt() + "/tf-bundles/little_ruan_iris_2shards"; }
std::string half_dir() { return ckpt() + "/tf-bundles/tf-serving_saved_model_half_plus_two_cpu"; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The error message of `fn`, or a test failure when it does not throw bertrt::Error.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a bertrt::Error";
  return "";
}

size_t find_tensor(const CheckpointReader& r, const std::string& name) {
  const auto& ts = r.tensors();
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].name == name) return i;
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

template <typename T>
T scalar(const std::vector<uint8_t>& bytes) {
  T v;
  EXPECT_EQ(bytes.size(), sizeof v);
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

// ---------------------------------------------------------------- the complete tiny BERT

TEST(TfBundle, KerasBertTinyReadsEveryTensor) {
  BERTRT_REQUIRE_PATH(tiny_dir());
  auto r = open_tf_bundle(tiny_dir() + "/bert_model.ckpt");
  EXPECT_EQ(r->format(), "tf1-bundle");
  ASSERT_EQ(r->tensors().size(), 139u);  // README: weights, adam_m/adam_v, global_step
  uint64_t total = 0;
  for (size_t i = 0; i < r->tensors().size(); ++i) {
    const CheckpointTensor& t = r->tensors()[i];
    EXPECT_EQ(t.location, "bert_model.ckpt.data-00000-of-00001");
    const std::vector<uint8_t> bytes = r->read(i);  // crc32c verified inside
    EXPECT_EQ(bytes.size(), t.nbytes) << t.name;
    total += bytes.size();
  }
  // The shard holds exactly the tensors, back to back.
  EXPECT_EQ(total, fs::file_size(tiny_dir() + "/bert_model.ckpt.data-00000-of-00001"));
  const size_t gs = find_tensor(*r, "global_step");
  EXPECT_EQ(r->tensors()[gs].dtype, "I64");
  EXPECT_TRUE(r->tensors()[gs].shape.empty());
  EXPECT_EQ(scalar<int64_t>(r->read(gs)), 20);
  const CheckpointTensor& we = r->tensors()[find_tensor(*r, "bert/embeddings/word_embeddings")];
  EXPECT_EQ(we.dtype, "F32");
  EXPECT_EQ(we.shape, (std::vector<int64_t>{15, 4}));
  // The .index path itself and the folder open the same bundle.
  EXPECT_EQ(open_tf_bundle(tiny_dir() + "/bert_model.ckpt.index")->tensors().size(), 139u);
  EXPECT_EQ(open_tf_bundle(tiny_dir())->tensors().size(), 139u);
}

TEST(TfBertNames, KerasBertTinyMapsAllWeights) {
  BERTRT_REQUIRE_PATH(tiny_dir());
  auto r = open_tf_bundle(tiny_dir() + "/bert_model.ckpt");
  const TfBertCheckpoint m = map_tf_bert(*r, tiny_dir() + "/bert_config.json");
  EXPECT_EQ(m.config.hidden_size, 4);
  EXPECT_EQ(m.config.num_hidden_layers, 2);
  EXPECT_EQ(m.config.vocab_size, 15);
  EXPECT_EQ(m.config.hidden_act, "gelu_new");  // the original code's tanh GELU
  EXPECT_EQ(m.config.gelu(), Gelu::kTanh);
  EXPECT_TRUE(m.heads.mlm);
  EXPECT_TRUE(m.heads.nsp);
  EXPECT_FALSE(m.heads.classifier());
  // 5 embeddings + 16 per layer x 2 + pooler 2 + MLM 5 + NSP 2.
  EXPECT_EQ(m.tensors.size(), 46u);
  EXPECT_TRUE(m.absent.empty());
  ASSERT_EQ(m.skipped.size(), 93u);  // 46 adam_m + 46 adam_v + global_step
  std::map<std::string, int> reasons;
  for (const auto& [name, why] : m.skipped) ++reasons[why];
  EXPECT_EQ(reasons["optimizer slot (adam_m)"], 46);
  EXPECT_EQ(reasons["optimizer slot (adam_v)"], 46);
  EXPECT_EQ(reasons["training step counter (global_step)"], 1);

  std::map<std::string, const MappedTensor*> hf;
  for (const MappedTensor& t : m.tensors) hf[t.hf_name] = &t;
  auto expect = [&](const std::string& tf, const std::string& name, std::vector<int64_t> shape,
                    bool transpose) {
    ASSERT_TRUE(hf.count(name)) << name;
    EXPECT_EQ(hf[name]->tf_name, tf);
    EXPECT_EQ(hf[name]->hf_shape, shape) << name;
    EXPECT_EQ(hf[name]->transpose, transpose) << name;
    EXPECT_EQ(r->tensors()[hf[name]->source_index].name, tf);
  };
  expect("bert/embeddings/word_embeddings", "bert.embeddings.word_embeddings.weight", {15, 4}, false);
  expect("bert/embeddings/position_embeddings", "bert.embeddings.position_embeddings.weight", {16, 4}, false);
  expect("bert/embeddings/LayerNorm/gamma", "bert.embeddings.LayerNorm.weight", {4}, false);
  expect("bert/encoder/layer_1/attention/self/query/kernel",
         "bert.encoder.layer.1.attention.self.query.weight", {4, 4}, true);
  expect("bert/encoder/layer_0/intermediate/dense/kernel",
         "bert.encoder.layer.0.intermediate.dense.weight", {16, 4}, true);  // TF [4, 16]
  expect("bert/encoder/layer_0/output/dense/kernel", "bert.encoder.layer.0.output.dense.weight",
         {4, 16}, true);
  expect("bert/encoder/layer_1/output/LayerNorm/beta", "bert.encoder.layer.1.output.LayerNorm.bias",
         {4}, false);
  expect("bert/pooler/dense/kernel", "bert.pooler.dense.weight", {4, 4}, true);
  expect("cls/predictions/output_bias", "cls.predictions.bias", {15}, false);
  expect("cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", {4, 4}, true);
  expect("cls/predictions/transform/LayerNorm/gamma", "cls.predictions.transform.LayerNorm.weight",
         {4}, false);
  expect("cls/seq_relationship/output_weights", "cls.seq_relationship.weight", {2, 4}, false);
  expect("cls/seq_relationship/output_bias", "cls.seq_relationship.bias", {2}, false);

  // Reading in the HF layout: kernels come out transposed, everything else as stored.
  const MappedTensor& inter = *hf["bert.encoder.layer.0.intermediate.dense.weight"];
  const std::vector<float> raw = bytes_to_f32(r->tensors()[inter.source_index], r->read(inter.source_index));
  const std::vector<float> w = read_mapped_f32(*r, inter);
  ASSERT_EQ(w.size(), 64u);
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(w[o * 4 + i], raw[i * 16 + o]);
  const MappedTensor& nsp = *hf["cls.seq_relationship.weight"];
  EXPECT_EQ(read_mapped_f32(*r, nsp),
            bytes_to_f32(r->tensors()[nsp.source_index], r->read(nsp.source_index)));
  // LayerNorm gammas of a checkpoint written right after init hold finite values.
  for (const MappedTensor& t : m.tensors)
    for (float v : read_mapped_f32(*r, t)) ASSERT_TRUE(std::isfinite(v)) << t.hf_name;
}

TEST(TfBertNames, NameRules) {
  auto hf = [](const std::string& tf) { return map_tf_bert_name(tf).hf_name; };
  EXPECT_EQ(hf("bert/encoder/layer_11/attention/output/dense/bias"),
            "bert.encoder.layer.11.attention.output.dense.bias");
  EXPECT_TRUE(map_tf_bert_name("bert/encoder/layer_11/attention/output/dense/kernel").transpose);
  EXPECT_FALSE(map_tf_bert_name("cls/seq_relationship/output_weights").transpose);
  EXPECT_EQ(hf("output_weights"), "classifier.weight");
  EXPECT_EQ(hf("output_bias"), "classifier.bias");
  EXPECT_FALSE(map_tf_bert_name("output_weights").transpose);
  for (const char* slot : {"bert/pooler/dense/kernel/adam_m", "bert/pooler/dense/kernel/Adam_1",
                           "bert/pooler/dense/kernel/Momentum", "global_step", "beta1_power",
                           "AdamWeightDecayOptimizer/bert/pooler/dense/kernel"})
    EXPECT_TRUE(map_tf_bert_name(slot).skip) << slot;
  // run_squad.py's span head: [2, H] already [out, in], like qa_outputs.
  EXPECT_EQ(hf("cls/squad/output_weights"), "qa_outputs.weight");
  EXPECT_FALSE(map_tf_bert_name("cls/squad/output_weights").transpose);
  EXPECT_EQ(hf("cls/squad/output_bias"), "qa_outputs.bias");
  EXPECT_TRUE(map_tf_bert_name("cls/squad/output_weights/adam_m").skip);
  const std::string err = error_of([] { map_tf_bert_name("cls/squad/kernel"); });
  EXPECT_NE(err.find("cls/squad/output_weights"), std::string::npos) << err;
}

// ---------------------------------------------------------------- real index files, no .data

struct RealIndex {
  const char* dir;
  size_t total, mapped, skipped;
  bool mlm, nsp;
  int labels;
  size_t absent;
};

// Counts: totals from the README; BERT weights = 5 embeddings + 16 per layer + 2 pooler, MLM 5,
// NSP 2, classifier 2; skipped = adam_m + adam_v per weight (+ global_step).
const RealIndex kRealIndexes[] = {
    {"google-chinese_L-12_H-768_A-12", 206, 206, 0, true, true, 0, 0},
    {"google-uncased_L-24_H-1024_A-16", 398, 398, 0, true, true, 0, 0},
    {"news_text_class", 202, 202, 0, true, false, 0, 2},  // MLM-only graph: no pooler, no NSP
    {"huawei_finetuned-chinese", 604, 201, 403, false, false, 8, 0},
    {"covbert", 619, 206, 413, true, true, 0, 0},
};

TEST(TfBertNames, RealGoogleAndFineTunedIndexes) {
  for (const RealIndex& c : kRealIndexes) {
    SCOPED_TRACE(c.dir);
    const std::string dir = ckpt() + "/tf1-index/" + c.dir;
    BERTRT_REQUIRE_PATH(dir);
    auto r = open_tf_bundle(dir + "/bert_model.ckpt");
    EXPECT_EQ(r->tensors().size(), c.total);
    const TfBertCheckpoint m = map_tf_bert(*r, dir + "/bert_config.json");
    EXPECT_EQ(m.tensors.size(), c.mapped);
    EXPECT_EQ(m.skipped.size(), c.skipped);
    EXPECT_EQ(m.absent.size(), c.absent);
    EXPECT_EQ(m.heads.mlm, c.mlm);
    EXPECT_EQ(m.heads.nsp, c.nsp);
    EXPECT_EQ(m.heads.num_labels(), c.labels);
    EXPECT_EQ(m.config.hidden_act, "gelu_new");
    // Every listed variable is mapped or skipped, once.
    std::set<size_t> seen;
    for (const MappedTensor& t : m.tensors) EXPECT_TRUE(seen.insert(t.source_index).second);
    EXPECT_EQ(seen.size() + m.skipped.size(), c.total);
    // Shapes follow the config: word embeddings [V, H], each query kernel [H, H] → HF [H, H],
    // intermediate kernel TF [H, I] → HF [I, H].
    const int64_t V = m.config.vocab_size, H = m.config.hidden_size, I = m.config.intermediate_size;
    for (const MappedTensor& t : m.tensors) {
      const CheckpointTensor& src = r->tensors()[t.source_index];
      std::vector<int64_t> tf_shape = t.hf_shape;
      if (t.transpose) std::swap(tf_shape[0], tf_shape[1]);
      EXPECT_EQ(src.shape, tf_shape) << t.tf_name;
      if (t.hf_name == "bert.embeddings.word_embeddings.weight") {
        EXPECT_EQ(t.hf_shape, (std::vector<int64_t>{V, H}));
      }
      if (t.hf_name.find("intermediate.dense.weight") != std::string::npos) {
        EXPECT_EQ(src.shape, (std::vector<int64_t>{H, I}));
      }
    }
    // The bytes are not shipped: reading says which shard file is missing.
    const std::string err = error_of([&] { r->read(0); });
    EXPECT_NE(err.find("bert_model.ckpt.data-00000-of-00001"), std::string::npos) << err;
    EXPECT_NE(err.find("missing data shard"), std::string::npos) << err;
  }
}

TEST(TfBertNames, RealIndexesKnownShapes) {
  const std::string large = ckpt() + "/tf1-index/google-uncased_L-24_H-1024_A-16";
  BERTRT_REQUIRE_PATH(large);
  auto r = open_tf_bundle(large + "/bert_model.ckpt.index");
  const TfBertCheckpoint m = map_tf_bert(*r, large + "/bert_config.json");
  std::map<std::string, std::vector<int64_t>> hf;
  for (const MappedTensor& t : m.tensors) hf[t.hf_name] = t.hf_shape;
  EXPECT_EQ(hf["bert.embeddings.word_embeddings.weight"], (std::vector<int64_t>{30522, 1024}));
  EXPECT_EQ(hf["bert.encoder.layer.23.attention.self.query.weight"], (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(hf["bert.encoder.layer.23.intermediate.dense.weight"], (std::vector<int64_t>{4096, 1024}));
  EXPECT_EQ(hf["cls.predictions.bias"], (std::vector<int64_t>{30522}));

  const std::string ft = ckpt() + "/tf1-index/huawei_finetuned-chinese";
  BERTRT_REQUIRE_PATH(ft);
  auto f = open_tf_bundle(ft);
  const TfBertCheckpoint c = map_tf_bert(*f, ft + "/bert_config.json");
  EXPECT_EQ(c.heads.labels, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7"}));
  bool found = false;
  for (const MappedTensor& t : c.tensors)
    if (t.hf_name == "classifier.weight") {
      found = true;
      EXPECT_EQ(t.tf_name, "output_weights");
      EXPECT_FALSE(t.transpose);
      EXPECT_EQ(t.hf_shape, (std::vector<int64_t>{8, 768}));
    }
  EXPECT_TRUE(found);
}

TEST(TfBertNames, ConfigMismatchNamesVariableAndShapes) {
  const std::string dir = ckpt() + "/tf1-index/google-chinese_L-12_H-768_A-12";
  BERTRT_REQUIRE_PATH(dir);
  auto r = open_tf_bundle(dir);
  BertConfig c = read_bert_config_json(dir + "/bert_config.json");
  c.vocab_size = 30522;  // the English vocabulary against the Chinese checkpoint
  std::string err = error_of([&] { map_tf_bert(*r, c); });
  EXPECT_NE(err.find("bert/embeddings/word_embeddings"), std::string::npos) << err;
  EXPECT_NE(err.find("[21128, 768]"), std::string::npos) << err;
  EXPECT_NE(err.find("[30522, 768]"), std::string::npos) << err;
  c = read_bert_config_json(dir + "/bert_config.json");
  c.num_hidden_layers = 6;  // layer_6..layer_11 are then unknown
  err = error_of([&] { map_tf_bert(*r, c); });
  EXPECT_NE(err.find("bert/encoder/layer_10"), std::string::npos) << err;
  c.num_hidden_layers = 13;  // layer 12 is then missing
  err = error_of([&] { map_tf_bert(*r, c); });
  EXPECT_NE(err.find("bert.encoder.layer.12."), std::string::npos) << err;
}

TEST(Sstable, CovbertSnappyBlocks) {
  const std::string index = ckpt() + "/tf1-index/covbert/bert_model.ckpt.index";
  BERTRT_REQUIRE_PATH(index);
  const std::string bytes = slurp(index);
  // The first data block starts at 0; its trailer type byte says snappy (1).
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* p = b + bytes.size() - 48;
  uint64_t mo = 0, ms = 0, io = 0, is = 0;
  ASSERT_TRUE(get_varint64(&p, p + 40, &mo) && get_varint64(&p, p + 40, &ms));
  ASSERT_TRUE(get_varint64(&p, p + 40, &io) && get_varint64(&p, p + 40, &is));
  const uint8_t* q = b + io;
  uint32_t shared = 0, non_shared = 0, vlen = 0;
  ASSERT_TRUE(get_varint32(&q, b + io + is, &shared) && get_varint32(&q, b + io + is, &non_shared) &&
              get_varint32(&q, b + io + is, &vlen));
  q += non_shared;
  uint64_t doff = 0, dsize = 0;
  ASSERT_TRUE(get_varint64(&q, b + io + is, &doff) && get_varint64(&q, b + io + is, &dsize));
  EXPECT_EQ(doff, 0u);
  EXPECT_EQ(b[doff + dsize], 1) << "expected a snappy-compressed block";
  const std::vector<SstableEntry> kv = read_sstable_file(index);
  ASSERT_EQ(kv.size(), 620u);  // header + 619 tensors
  EXPECT_EQ(kv[0].key, "");
  EXPECT_EQ(kv[1].key, "bert/embeddings/LayerNorm/beta");
  EXPECT_EQ(kv.back().key, "global_step");
}

// ---------------------------------------------------------------- other real bundles

TEST(TfBundle, TwoShards) {
  BERTRT_REQUIRE_PATH(iris_dir());
  auto r = open_tf_bundle(iris_dir() + "/model.ckpt");
  ASSERT_EQ(r->tensors().size(), 18u);
  // Shard placement and sizes as the listing next to the files records them.
  const CheckpointTensor& graph = r->tensors()[find_tensor(*r, "_CHECKPOINTABLE_OBJECT_GRAPH")];
  EXPECT_EQ(graph.dtype, "STRING");
  EXPECT_EQ(graph.location, "model.ckpt.data-00000-of-00002");
  const CheckpointTensor& k1 = r->tensors()[find_tensor(*r, "layer-1/kernel/.ATTRIBUTES/VARIABLE_VALUE")];
  EXPECT_EQ(k1.location, "model.ckpt.data-00001-of-00002");
  EXPECT_EQ(k1.shape, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(k1.nbytes, 2048u);
  uint64_t shard1 = 0;
  for (size_t i = 0; i < r->tensors().size(); ++i) {
    const auto bytes = r->read(i);  // crc32c verified
    if (r->tensors()[i].dtype != "STRING") {
      EXPECT_EQ(bytes.size(), r->tensors()[i].nbytes);
    }
    if (r->tensors()[i].location == "model.ckpt.data-00001-of-00002") shard1 += bytes.size();
  }
  EXPECT_EQ(shard1, fs::file_size(iris_dir() + "/model.ckpt.data-00001-of-00002"));
  // The string tensor's layout (tensor_bundle.cc WriteStringTensor): varint64 length, the masked
  // crc32c of the length as a little-endian uint32, then the string, filling shard 0.
  const auto s = r->read(find_tensor(*r, "_CHECKPOINTABLE_OBJECT_GRAPH"));
  ASSERT_EQ(s.size(), 2091u);
  const uint8_t* p = s.data();
  uint64_t len = 0;
  ASSERT_TRUE(get_varint64(&p, s.data() + s.size(), &len));
  EXPECT_EQ(static_cast<size_t>(p - s.data()) + 4 + len, s.size());
  const uint32_t len32 = static_cast<uint32_t>(len);
  EXPECT_EQ(crc32c::unmask(load_le32(p)), crc32c::value(&len32, 4));
  // Adam's second moments are averages of squares: never negative.
  for (size_t i = 0; i < r->tensors().size(); ++i) {
    if (r->tensors()[i].name.find("/optimizer/v/") == std::string::npos) continue;
    for (float v : bytes_to_f32(r->tensors()[i], r->read(i))) EXPECT_GE(v, 0.0f);
  }
  EXPECT_GT(scalar<int64_t>(r->read(find_tensor(*r, "optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE"))), 0);
  // Not a BERT checkpoint: the mapping refuses it before building a layout for the config's 12
  // layers, since no variable backs them (io/config_check.h).
  BertConfig c;
  const std::string err = error_of([&] { map_tf_bert(*r, c); });
  EXPECT_NE(err.find("config num_hidden_layers = 12, but the weights have 0 layer(s)"), std::string::npos)
      << err;
}

TEST(TfBundle, SavedModelScalars) {
  BERTRT_REQUIRE_PATH(half_dir());
  auto r = open_tf_bundle(half_dir() + "/variables.index");
  ASSERT_EQ(r->tensors().size(), 5u);
  // tensorflow_serving's saved_model_half_plus_two.py: a = 0.5, b = 2, c = 3 (a2, c2 copies).
  const std::map<std::string, float> want = {{"a", 0.5f}, {"a2", 0.5f}, {"b", 2.0f}, {"c", 3.0f}, {"c2", 3.0f}};
  for (size_t i = 0; i < 5; ++i) {
    const CheckpointTensor& t = r->tensors()[i];
    EXPECT_EQ(t.dtype, "F32");
    EXPECT_TRUE(t.shape.empty());
    EXPECT_EQ(scalar<float>(r->read(i)), want.at(t.name)) << t.name;
  }
}

// ---------------------------------------------------------------- malformed input

// A real .index loaded for mutation: footer handles, the first data block, and crc repair so a
// mutation reaches the parser behind the block checksum.
struct RawIndex {
  std::string bytes;
  uint64_t index_off = 0, index_size = 0, data_off = 0, data_size = 0;

  explicit RawIndex(const std::string& path) : bytes(slurp(path)) {
    const uint8_t* p = u8() + bytes.size() - 48;
    uint64_t mo = 0, ms = 0;
    EXPECT_TRUE(get_varint64(&p, p + 40, &mo) && get_varint64(&p, p + 40, &ms) &&
                get_varint64(&p, p + 40, &index_off) && get_varint64(&p, p + 40, &index_size));
    const uint8_t* q = u8() + index_off;
    const uint8_t* end = q + index_size;
    uint32_t shared = 0, non_shared = 0, vlen = 0;
    EXPECT_TRUE(get_varint32(&q, end, &shared) && get_varint32(&q, end, &non_shared) &&
                get_varint32(&q, end, &vlen));
    q += non_shared;
    EXPECT_TRUE(get_varint64(&q, end, &data_off) && get_varint64(&q, end, &data_size));
  }
  const uint8_t* u8() const { return reinterpret_cast<const uint8_t*>(bytes.data()); }
  void fix_crc(uint64_t off, uint64_t size) {
    const uint32_t c = crc32c::mask(crc32c::value(u8() + off, static_cast<size_t>(size) + 1));
    std::memcpy(&bytes[static_cast<size_t>(off + size + 1)], &c, 4);
  }
  void fix_data_crc() { fix_crc(data_off, data_size); }
  // Position of `needle` inside the first data block.
  size_t find(const std::string& needle) const {
    const size_t at = bytes.find(needle, static_cast<size_t>(data_off));
    EXPECT_NE(at, std::string::npos);
    EXPECT_LT(at, data_off + data_size);
    return at;
  }
};

// Copies the iris bundle (uncompressed blocks, two shards) into `dir`; returns the prefix.
std::string copy_iris(const TempDir& dir, bool shard0 = true, bool shard1 = true) {
  fs::copy_file(iris_dir() + "/model.ckpt.index", dir.file("model.ckpt.index"));
  if (shard0) fs::copy_file(iris_dir() + "/model.ckpt.data-00000-of-00002", dir.file("model.ckpt.data-00000-of-00002"));
  if (shard1) fs::copy_file(iris_dir() + "/model.ckpt.data-00001-of-00002", dir.file("model.ckpt.data-00001-of-00002"));
  for (const auto& e : fs::directory_iterator(dir.path()))
    fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write);
  return dir.file("model.ckpt");
}

TEST(TfBundleMalformed, BadFooterMagic) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  const std::string prefix = copy_iris(dir);
  std::string b = slurp(prefix + ".index");
  b.back() ^= 0x01;
  spit(prefix + ".index", b);
  const std::string err = error_of([&] { open_tf_bundle(prefix); });
  EXPECT_NE(err.find("model.ckpt.index"), std::string::npos) << err;
  EXPECT_NE(err.find("magic"), std::string::npos) << err;
}

TEST(TfBundleMalformed, TruncatedIndex) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  const std::string prefix = copy_iris(dir);
  const std::string b = slurp(prefix + ".index");
  spit(prefix + ".index", b.substr(0, b.size() - 10));
  std::string err = error_of([&] { open_tf_bundle(prefix); });
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  spit(prefix + ".index", b.substr(0, 30));
  err = error_of([&] { open_tf_bundle(prefix); });
  EXPECT_NE(err.find("shorter than the 48-byte footer"), std::string::npos) << err;
  // Footer intact but the blocks before it cut off: the index handle points past the end.
  spit(prefix + ".index", b.substr(b.size() - 100));
  err = error_of([&] { open_tf_bundle(prefix); });
  EXPECT_NE(err.find("runs past the end"), std::string::npos) << err;
}

TEST(TfBundleMalformed, FlippedIndexByteFailsBlockCrc) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  const std::string prefix = copy_iris(dir);
  RawIndex raw(prefix + ".index");
  raw.bytes[raw.find("layer-1")] ^= 0x20;
  spit(prefix + ".index", raw.bytes);
  const std::string err = error_of([&] { open_tf_bundle(prefix); });
  EXPECT_NE(err.find("data block at offset 0: crc32c mismatch"), std::string::npos) << err;
}

TEST(TfBundleMalformed, FlippedDataByteNamesTheTensor) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  const std::string prefix = copy_iris(dir);
  // The listing puts layer-1/kernel at offset 0, 2048 bytes, of shard 1; layer-1/bias follows.
  const std::string shard = prefix + ".data-00001-of-00002";
  std::string b = slurp(shard);
  b[100] ^= 0x04;
  spit(shard, b);
  auto r = open_tf_bundle(prefix);
  const std::string err =
      error_of([&] { r->read(find_tensor(*r, "layer-1/kernel/.ATTRIBUTES/VARIABLE_VALUE")); });
  EXPECT_NE(err.find("model.ckpt.data-00001-of-00002"), std::string::npos) << err;
  EXPECT_NE(err.find("'layer-1/kernel/.ATTRIBUTES/VARIABLE_VALUE'"), std::string::npos) << err;
  EXPECT_NE(err.find("crc32c mismatch"), std::string::npos) << err;
  EXPECT_NO_THROW(r->read(find_tensor(*r, "layer-1/bias/.ATTRIBUTES/VARIABLE_VALUE")));
  // A shard cut short: the tensor's bytes run past its end.
  spit(shard, b.substr(0, 4000));
  auto r2 = open_tf_bundle(prefix);
  const std::string err2 =
      error_of([&] { r2->read(find_tensor(*r2, "layer-2/bias/.ATTRIBUTES/VARIABLE_VALUE")); });
  EXPECT_NE(err2.find("runs past the end of the 4000-byte shard"), std::string::npos) << err2;
}

TEST(TfBundleMalformed, MissingShard) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  const std::string prefix = copy_iris(dir, true, false);
  auto r = open_tf_bundle(prefix);  // listing needs only the index
  EXPECT_EQ(r->tensors().size(), 18u);
  EXPECT_NO_THROW(r->read(find_tensor(*r, "_CHECKPOINTABLE_OBJECT_GRAPH")));  // shard 0 is there
  const std::string err =
      error_of([&] { r->read(find_tensor(*r, "layer-2/bias/.ATTRIBUTES/VARIABLE_VALUE")); });
  EXPECT_NE(err.find("model.ckpt.data-00001-of-00002: missing data shard 1 of 2"), std::string::npos)
      << err;
  EXPECT_NE(err.find("layer-2/bias"), std::string::npos) << err;
  // No index at all.
  const std::string err2 = error_of([&] { open_tf_bundle(dir.file("nothing.ckpt")); });
  EXPECT_NE(err2.find("nothing.ckpt.index: TF checkpoint index not found"), std::string::npos) << err2;
}

// Writes `raw` (with the first data block's crc repaired) and returns open_tf_bundle's error.
std::string open_error(const TempDir& dir, RawIndex& raw) {
  raw.fix_data_crc();
  spit(dir.file("model.ckpt.index"), raw.bytes);
  return error_of([&] { open_tf_bundle(dir.file("model.ckpt")); });
}

TEST(TfBundleMalformed, CorruptVarintsAndLengths) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  copy_iris(dir);
  const RawIndex orig(dir.file("model.ckpt.index"));
  // The first entry is the header: shared 0, non_shared 0, value_len 6, "08 02 1a 02 08 01"
  // (num_shards 2, version {producer 1}).
  const size_t e0 = static_cast<size_t>(orig.data_off);
  ASSERT_EQ(orig.bytes.substr(e0, 9), std::string("\x00\x00\x06\x08\x02\x1a\x02\x08\x01", 9));
  {  // entry header varint that never ends (continuation bits to the block end)
    RawIndex raw = orig;
    for (size_t i = 0; i < 11; ++i) raw.bytes[e0 + i] = '\xff';
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("bad varint"), std::string::npos) << err;
  }
  {  // shared prefix longer than the previous key
    RawIndex raw = orig;
    raw.bytes[e0] = 5;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("shares 5 key bytes but the previous key has 0"), std::string::npos) << err;
  }
  {  // value length past the block end
    RawIndex raw = orig;
    raw.bytes[e0 + 2] = '\xff';
    raw.bytes[e0 + 3] = 0x7f;  // value_len 16383
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("runs past the block end"), std::string::npos) << err;
  }
  {  // protobuf length inside the header claims more bytes than the message has
    RawIndex raw = orig;
    raw.bytes[e0 + 6] = 0x40;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("BundleHeaderProto: field 3: 64 bytes claimed"), std::string::npos) << err;
  }
  {  // the footer's index handle (offset 1138 = varint f2 08, at footer bytes 3-4) past the end
    RawIndex raw = orig;
    const size_t f = raw.bytes.size() - 48;
    ASSERT_EQ(raw.bytes.substr(f + 3, 2), "\xf2\x08");
    raw.bytes[f + 3] = '\xff';
    raw.bytes[f + 4] = '\x7f';  // offset 16383
    spit(dir.file("model.ckpt.index"), raw.bytes);
    const std::string err = error_of([&] { open_tf_bundle(dir.file("model.ckpt")); });
    EXPECT_NE(err.find("runs past the end"), std::string::npos) << err;
  }
}

TEST(TfBundleMalformed, EntryFieldsRefused) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  copy_iris(dir);
  const RawIndex orig(dir.file("model.ckpt.index"));
  const size_t e0 = static_cast<size_t>(orig.data_off);
  // The entry of layer-1/bias: dtype 1 (08 01), then shape (12 ..).
  const std::vector<SstableEntry> kv = read_sstable_file(dir.file("model.ckpt.index"));
  std::string value;
  for (const auto& e : kv)
    if (e.key == "layer-1/bias/.ATTRIBUTES/VARIABLE_VALUE") value = e.value;
  ASSERT_EQ(value.substr(0, 3), std::string("\x08\x01\x12", 3));
  {  // big-endian header: num_shards field (08 02) rewritten as endianness = BIG (10 01)
    RawIndex raw = orig;
    raw.bytes[e0 + 3] = 0x10;
    raw.bytes[e0 + 4] = 0x01;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("big-endian"), std::string::npos) << err;
  }
  {  // unknown dtype: DT_COMPLEX64 (8)
    RawIndex raw = orig;
    raw.bytes[raw.find(value) + 1] = 8;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("tensor 'layer-1/bias/.ATTRIBUTES/VARIABLE_VALUE': unsupported TF dtype 8"),
              std::string::npos) << err;
  }
  {  // the shape field turned into slices (field 7): a partitioned variable
    RawIndex raw = orig;
    raw.bytes[raw.find(value) + 2] = 0x3a;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("partitioned"), std::string::npos) << err;
  }
  {  // dtype int32 keeps 4 bytes per element, so flip to uint8: size no longer matches the shape
    RawIndex raw = orig;
    raw.bytes[raw.find(value) + 1] = 4;
    const std::string err = open_error(dir, raw);
    EXPECT_NE(err.find("entry size 512 bytes, but shape [128] of U8 needs 128"), std::string::npos)
        << err;
  }
}

// An index whose entries overlap in a shard: a valid bundle (its CRCs right) in which one entry
// points at another's bytes. Refused when the index is read, before any tensor is: each byte of a
// shard belongs to one tensor, as TF writes it.
TEST(TfBundleMalformed, OverlappingEntriesRefused) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  copy_iris(dir);
  RawIndex raw(dir.file("model.ckpt.index"));
  // Each entry's shard and where its offset varint (field 4) lies in its value.
  struct Found {
    std::string key;
    uint64_t shard = 0, offset = 0;
    size_t at = 0, len = 0;  // the varint's place in the raw index
  };
  std::vector<Found> entries;
  for (const SstableEntry& e : read_sstable_file(dir.file("model.ckpt.index"))) {
    if (e.key.empty()) continue;  // the bundle header
    Found f{e.key};
    const uint8_t* v = reinterpret_cast<const uint8_t*>(e.value.data());
    const uint8_t *p = v, *end = v + e.value.size();
    while (p < end) {
      uint64_t tag = 0, x = 0;
      ASSERT_TRUE(get_varint64(&p, end, &tag));
      const uint8_t* field = p;
      if ((tag & 7) == 0) {
        ASSERT_TRUE(get_varint64(&p, end, &x));
        if (tag >> 3 == 3) f.shard = x;
        if (tag >> 3 == 4) f.offset = x, f.at = raw.find(e.value) + size_t(field - v), f.len = size_t(p - field);
      } else if ((tag & 7) == 2) {
        ASSERT_TRUE(get_varint64(&p, end, &x));
        p += x;
      } else {
        p += 4;  // fixed32: the crc
      }
    }
    if (f.len) entries.push_back(f);
  }
  for (const Found& a : entries)
    for (const Found& b : entries)
      if (a.key != b.key && a.shard == b.shard && a.len == b.len && a.offset != b.offset) {
        raw.bytes.replace(a.at, a.len, raw.bytes.substr(b.at, b.len));  // a now starts at b
        const std::string err = open_error(dir, raw);
        EXPECT_NE(err.find("overlap in shard"), std::string::npos) << err;
        EXPECT_NE(err.find("each byte of a shard belongs to one tensor"), std::string::npos) << err;
        return;
      }
  FAIL() << "no two entries of one shard with offsets of the same length in " << iris_dir();
}

// Every single-byte corruption of the first data block (crc repaired so the parser sees it) is
// an error or shows in what is read (a renamed tensor, other bytes); it is never silently the
// same, except in the restart array, which a forward scan does not need. Never a crash, hang or
// runaway allocation either (run under ASan to see that part).
TEST(TfBundleMalformed, EveryByteOfADataBlock) {
  BERTRT_REQUIRE_PATH(iris_dir());
  TempDir dir;
  copy_iris(dir);
  const RawIndex orig(dir.file("model.ckpt.index"));
  // Everything a reader exposes, as one string.
  auto snapshot = [&] {
    auto r = open_tf_bundle(dir.file("model.ckpt"));
    std::string out;
    for (size_t k = 0; k < r->tensors().size(); ++k) {
      const CheckpointTensor& t = r->tensors()[k];
      const auto bytes = r->read(k);
      out += fmt::format("{}|{}|{}|{}|", t.name, t.dtype, fmt::join(t.shape, ","), t.location);
      out.append(bytes.begin(), bytes.end());
    }
    return out;
  };
  const std::string want = snapshot();
  const size_t block = static_cast<size_t>(orig.data_off), n = static_cast<size_t>(orig.data_size);
  const size_t restarts = n - 4 - 4 * load_le32(orig.u8() + block + n - 4);
  size_t errors = 0, changed = 0;
  for (size_t i = 0; i < n; ++i) {
    RawIndex raw = orig;
    raw.bytes[block + i] ^= 0x5a;
    raw.fix_data_crc();
    spit(dir.file("model.ckpt.index"), raw.bytes);
    try {
      if (snapshot() != want) {
        ++changed;
        continue;
      }
      // Harmless: the restart array, the header's VersionDef (bytes 7-8, not needed to read),
      // and the tag of an empty field (a scalar's empty shape "12 00" becomes another empty
      // field: still a scalar).
      const bool empty_field_tag = i + 1 < n && orig.bytes[block + i + 1] == 0;
      EXPECT_TRUE(i >= restarts || i == 7 || i == 8 || empty_field_tag)
          << "corrupting byte " << i << " went unnoticed";
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(changed, 0u);
}

TEST(TfBundleMalformed, BadSnappyBlock) {
  const std::string index = ckpt() + "/tf1-index/covbert/bert_model.ckpt.index";
  BERTRT_REQUIRE_PATH(index);
  TempDir dir;
  const std::string path = dir.file("bert_model.ckpt.index");
  const RawIndex orig(index);
  {  // an uncompressed length of 256 MiB claimed: refused before allocating
    RawIndex raw = orig;
    raw.bytes.replace(0, 4, "\xff\xff\xff\x7f", 4);
    raw.fix_data_crc();
    spit(path, raw.bytes);
    const std::string err = error_of([&] { open_tf_bundle(path); });
    EXPECT_NE(err.find("bad snappy data"), std::string::npos) << err;
  }
  {  // a literal longer than the compressed stream: the block starts with the varint length
     // (3 bytes) and a literal tag (f0 49); claim a 16 MiB literal instead (fc + 4 length bytes)
    RawIndex raw = orig;
    ASSERT_EQ(raw.bytes.substr(3, 2), "\xf0\x49");
    raw.bytes.replace(3, 5, "\xfc\xff\xff\xff\x00", 5);
    raw.fix_data_crc();
    spit(path, raw.bytes);
    const std::string err = error_of([&] { open_tf_bundle(path); });
    EXPECT_NE(err.find("data block at offset 0: bad snappy data"), std::string::npos) << err;
  }
  {  // an unknown compression type
    RawIndex raw = orig;
    raw.bytes[static_cast<size_t>(raw.data_size)] = 3;
    raw.fix_data_crc();
    spit(path, raw.bytes);
    const std::string err = error_of([&] { open_tf_bundle(path); });
    EXPECT_NE(err.find("unknown compression type 3"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace bertrt::convert
