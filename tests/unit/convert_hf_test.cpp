// bertrt-convert on Hugging Face folders: tiny random BERTs written by
// tests/reference/make_hf_models.py in every layout and quirk (safetensors single/sharded,
// torch.save zip/legacy/sharded, f16/bf16, bare names, gamma/beta, position_ids, tied decoder),
// converted and run through BertModel against float64 PyTorch outputs; HF → .brt → HF bit for
// bit; the real folders in ../shared/ckpt/hf; malformed inputs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <memory>

#include "backends/backend.h"
#include "convert/export_hf.h"
#include "convert/hf_import.h"
#include "convert/tensor_encode.h"
#include "convert/tf_bundle.h"
#include "core/error.h"
#include "core/version.h"
#include "io/model_io.h"
#include "io/safetensors.h"
#include "test_util.h"

namespace bertrt::convert {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The reference is float64 on the stored weights, so the difference is bertrt's fp32 forward alone,
// measured relative to the tensor's largest magnitude: fp32 unit roundoff is 6e-8, and sums of
// ≤ 37 terms through two layers, LayerNorm and softmax give at most 3.3e-7 here (measured over all
// outputs and files); 2e-6 leaves 6× headroom while one wrong, rounded or misplaced weight
// (≥ 1e-3 relative, f16 rounding is 5e-4) fails.
constexpr double kTol = 2e-6;

bool require_data() {
  const char* v = std::getenv("BERTRT_REQUIRE_DATA");
  return v && std::string(v) == "1";
}

int run_python(const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + test::source_dir() + "/tests/reference/make_hf_models.py " + args;
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The checkpoints are generated once per build tree (ctest runs every test in its own process):
// build/reference/hf_models, regenerated when make_hf_models.py is newer than the stamp; a file
// lock keeps parallel test processes from generating at the same time.
int generate_models(const std::string& dir) {
  const std::string script = test::source_dir() + "/tests/reference/make_hf_models.py";
  fs::create_directories(fs::path(dir).parent_path());
  const int lock = ::open((dir + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return -1;
  const std::string stamp = dir + "/complete";
  int rc = 0;
  if (!fs::exists(stamp) || fs::last_write_time(script) > fs::last_write_time(stamp)) {
    fs::remove_all(dir);
    rc = run_python("--out " + dir);
    if (rc == 0) std::ofstream(stamp) << "ok\n";
  }
  ::close(lock);  // releases the lock
  return rc;
}

class ConvertHf : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (rc_ == -1) rc_ = generate_models(models_dir());
  }
  static std::string models_dir() { return test::build_dir() + "/reference/hf_models"; }
  void SetUp() override {
    if (rc_ == 77) {
      if (require_data()) FAIL() << "python3-torch is missing (BERTRT_REQUIRE_DATA=1)";
      GTEST_SKIP() << "python3-torch missing: make_hf_models.py cannot build the test checkpoints";
    }
    ASSERT_EQ(rc_, 0) << "make_hf_models.py failed";
  }
  static std::string model(const std::string& name) { return models_dir() + "/" + name; }
  static SafetensorsFile ref() { return SafetensorsFile::open(model("ref.safetensors")); }

  // Converts `input` into tmp_/out.brt and returns the converter's warnings.
  std::vector<std::string> convert(const std::string& input, const std::string& dtype = "f32",
                                   ConvertOptions opts = {}) {
    opts.dtype = *parse_float_dtype(dtype);
    ConvertedModel m = import_checkpoint(input, opts);
    write_model_file(out(), m.contents);
    return m.warnings;
  }
  std::string out() const { return tmp_.file("out.brt"); }

  test::TempDir tmp_;
  static int rc_;
};
int ConvertHf::rc_ = -1;

// `floor` bounds the denominator from below for outputs that are a cancelling sum: their rounding
// error scales with the terms summed (≈ 1 here), not with the small result.
void expect_close(const std::string& what, const float* got, const std::vector<float>& want,
                  double floor = 1e-30) {
  EXPECT_TRUE(test::rel_close(got, want, kTol, floor)) << what;
}

std::vector<int32_t> ints(const SafetensorsFile& f, const std::string& name) {
  auto v = f.to_i64(name);
  return std::vector<int32_t>(v.begin(), v.end());
}

// Loads `brt`, runs the forward on ref's inputs ("input/*") and compares with the outputs named
// `variant` + "/<output>": always the last hidden state; the pooler, MLM, NSP and classifier
// outputs when asked and present. variant "": a --forward-of file (last_hidden_state only).
void expect_forward(const std::string& brt, const SafetensorsFile& ref, const std::string& variant,
                    bool pooler = true) {
  const std::string prefix = "input/";
  LoadedModel m = load_model(brt);
  const auto ids = ints(ref, prefix + "input_ids"), tt = ints(ref, prefix + "token_type_ids"),
             mask = ints(ref, prefix + "attention_mask");
  const auto shape = ref.at(prefix + "input_ids").shape;
  const int B = int(shape[0]), T = int(shape[1]);
  EncoderInputs in{B, T, ids.data(), tt.data(), mask.data()};
  const HeadsConfig& h = m.model->heads();
  auto be = make_backend("reference");
  m.model->forward(*be, in, Targets{}, /*training=*/false);  // every head runs; no losses
  const std::string v = variant.empty() ? "" : variant + "/";
  expect_close(brt + " last_hidden_state", m.model->last_hidden_state(), ref.to_f32(v + "last_hidden_state"));
  if (pooler) expect_close(brt + " pooler_output", m.model->pooler_output(), ref.to_f32(v + "pooler_output"));
  if (variant.empty()) return;  // a forward of a real folder: the encoder output only
  if (h.nsp) expect_close(brt + " nsp", m.model->seq_relationship_logits().data(), ref.to_f32(v + "nsp_logits"));
  switch (h.resolved_kind()) {
    case HeadKind::kSequenceClassification:
      expect_close(brt + " classifier", m.model->logits().data(), ref.to_f32(v + "cls_logits"));
      break;
    case HeadKind::kRegression:
      // Two outputs of ~0.09, each 36 products of ~0.3 × ~0.5 that nearly cancel.
      expect_close(brt + " regression", m.model->logits().data(), ref.to_f32(v + "reg_logits"), 1.0);
      break;
    case HeadKind::kTokenClassification:
      expect_close(brt + " token classifier", m.model->logits().data(), ref.to_f32(v + "tok_logits"));
      break;
    case HeadKind::kQuestionAnswering: {
      const std::vector<float> qa = ref.to_f32(v + "qa_logits");  // [B·T, 2] = start, end
      std::vector<float> start, end;
      for (size_t i = 0; i < qa.size(); i += 2) start.push_back(qa[i]), end.push_back(qa[i + 1]);
      expect_close(brt + " start", m.model->start_logits().data(), start);
      expect_close(brt + " end", m.model->end_logits().data(), end);
      break;
    }
    case HeadKind::kNone: break;
  }
  if (h.mlm) expect_close(brt + " mlm", m.model->mlm_logits_all(*be), ref.to_f32(v + "mlm_logits"));
}

// Every tensor of `source` (a safetensors file; bare names get "bert.") is in `brt` with the
// same bytes, converted to `dtype` the way torch does when `expect` is given.
void expect_same_bytes(const std::string& brt, const SafetensorsFile& source) {
  const ModelFile f = ModelFile::open(brt);
  for (const SafetensorsTensor& t : source.tensors()) {
    std::string name = t.name;
    if (name.rfind("embeddings.", 0) == 0 || name.rfind("encoder.", 0) == 0 || name.rfind("pooler.", 0) == 0)
      name = "bert." + name;
    const TensorRecord* r = f.find(name);
    ASSERT_NE(r, nullptr) << brt << ": " << name;
    EXPECT_EQ(r->shape, t.shape) << name;
    EXPECT_EQ(safetensors_dtype_name(r->dtype), t.dtype) << name;
    ASSERT_EQ(r->nbytes, t.nbytes) << name;
    EXPECT_EQ(std::memcmp(r->data, t.data, t.nbytes), 0) << name << " bytes differ";
  }
}

bool contains(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}
void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(2); }

// ---------------------------------------------------------------- forward parity, per format ---

TEST_F(ConvertHf, SafetensorsPreTrainingMatchesPyTorch) {
  const auto warnings = convert(model("st_pretraining_f32"));
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const SafetensorsFile r = ref();
  expect_forward(out(), r, "gelu_f32");
  expect_same_bytes(out(), SafetensorsFile::open(model("st_pretraining_f32/model.safetensors")));
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_TRUE(c.heads.mlm);
  EXPECT_TRUE(c.heads.nsp);
  EXPECT_EQ(c.config.hidden_size, 36);
  EXPECT_EQ(c.config.intermediate_size, 37);
  EXPECT_EQ(c.config.hidden_act, "gelu");
  EXPECT_EQ(c.metadata.at("source_format"), "safetensors");
  EXPECT_EQ(c.metadata.at("architecture"), "BertForPreTraining");
  EXPECT_EQ(c.metadata.at("converter_version"), "bertrt-convert " + std::string(version_string()));
  EXPECT_EQ(c.metadata.at("tokenizer.model_max_length"), "24");
  EXPECT_EQ(c.tokenizer.vocab.size(), 43u);
  EXPECT_EQ(c.tokenizer.vocab[7], "cat");
}

TEST_F(ConvertHf, HalfPrecisionSourcesMatchTheirReference) {
  const SafetensorsFile r = ref();
  for (const std::string prec : {"f16", "bf16"}) {
    convert(model("st_pretraining_" + prec));  // widened to f32 exactly
    expect_forward(out(), r, "gelu_" + prec);
  }
}

TEST_F(ConvertHf, DtypeOptionRoundsAsTorchDoes) {
  // f32 weights stored as f16/bf16 by the converter = the same weights rounded by torch.
  const SafetensorsFile r = ref();
  for (const std::string prec : {"f16", "bf16"}) {
    convert(model("st_pretraining_f32"), prec);
    expect_same_bytes(out(), SafetensorsFile::open(model("st_pretraining_" + prec + "/model.safetensors")));
    expect_forward(out(), r, "gelu_" + prec);
  }
}

TEST_F(ConvertHf, ShardedSafetensorsReadsEveryShard) {
  convert(model("st_sharded"));
  expect_same_bytes(out(), SafetensorsFile::open(model("st_pretraining_f32/model.safetensors")));
  expect_forward(out(), ref(), "gelu_f32");
}

TEST_F(ConvertHf, GeluPytorchTanhIsTheTanhApproximation) {
  convert(model("st_gelu_pytorch_tanh"));
  EXPECT_EQ(ModelFile::open(out()).contents().config.gelu(), Gelu::kTanh);
  expect_forward(out(), ref(), "gelu_new_f32");
}

TEST_F(ConvertHf, SequenceClassificationLabelsOrderedById) {
  convert(model("st_seqcls"));
  const ModelFile f = ModelFile::open(out());
  EXPECT_EQ(f.contents().heads.labels, (std::vector<std::string>{"negative", "neutral", "positive"}));
  EXPECT_EQ(f.contents().heads.task, "sst3");
  expect_forward(out(), ref(), "gelu_f32");
}

TEST_F(ConvertHf, TokenClassificationAndQuestionAnswering) {
  for (const std::string arch : {"tokcls", "qa"}) {
    const auto warnings = convert(model("st_" + arch));
    // Both classes are saved without a pooler: initialised, said so.
    EXPECT_TRUE(contains(warnings, "no pooler")) << arch;
    const ModelFile f = ModelFile::open(out());
    const auto& c = f.contents();
    if (arch == "tokcls") {
      EXPECT_EQ(c.heads.resolved_kind(), HeadKind::kTokenClassification);
      EXPECT_EQ(c.heads.labels, (std::vector<std::string>{"O", "B-PER", "I-PER"}));
    } else {
      EXPECT_EQ(c.heads.resolved_kind(), HeadKind::kQuestionAnswering);
      EXPECT_TRUE(c.heads.labels.empty());
    }
    EXPECT_EQ(c.metadata.at("converter.initialized"), "bert.pooler.dense.weight,bert.pooler.dense.bias");
    expect_same_bytes(out(), SafetensorsFile::open(model("st_" + arch + "/model.safetensors")));
    expect_forward(out(), ref(), "gelu_f32", /*pooler=*/false);
  }
}

TEST_F(ConvertHf, PreTrainingWithoutNspKeepsTheHeadsPresent) {
  // config.json says BertForPreTraining; the weights have no cls.seq_relationship.*.
  const auto warnings = convert(model("st_pretraining_no_nsp"));
  EXPECT_TRUE(contains(warnings, "the NSP head (cls.seq_relationship.*)")) << warnings.size();
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_TRUE(c.heads.mlm);
  EXPECT_FALSE(c.heads.nsp);
  EXPECT_EQ(c.metadata.at("architecture"), "BertForMaskedLM");
  EXPECT_EQ(c.metadata.at("architecture_declared"), "BertForPreTraining");
  EXPECT_EQ(c.metadata.at("converter.missing_heads"), "nsp");
  expect_same_bytes(out(), SafetensorsFile::open(model("st_pretraining_no_nsp/model.safetensors")));
  expect_forward(out(), ref(), "gelu_f32");  // encoder, pooler and MLM logits vs float64 PyTorch
  // Exported as BertForMaskedLM, which has no pooler: the source's pooler is kept all the same
  // (dropped, it came back initialised at random), so every source tensor round-trips.
  const std::string hf = tmp_.file("hf_mlm");
  export_hf(out(), hf);
  const SafetensorsFile src =
      SafetensorsFile::open(model("st_pretraining_no_nsp/model.safetensors"));
  const SafetensorsFile back = SafetensorsFile::open(hf + "/model.safetensors");
  ASSERT_NE(back.find("bert.pooler.dense.weight"), nullptr);
  EXPECT_EQ(back.tensors().size(), src.tensors().size());
  for (const SafetensorsTensor& t : src.tensors()) {
    const SafetensorsTensor* b = back.find(t.name);
    ASSERT_NE(b, nullptr) << t.name;
    ASSERT_EQ(b->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(b->data, t.data, t.nbytes), 0) << t.name;
  }
  // A fine-tuning architecture without its head: converted as the bare encoder, said so.
  const std::string dir = tmp_.file("nocls");
  fs::copy(model("st_pretraining_no_nsp"), dir, fs::copy_options::recursive);
  json cfg = read_json(dir + "/config.json");
  cfg["architectures"] = {"BertForSequenceClassification"};
  write_json(dir + "/config.json", cfg);
  ConvertOptions drop;
  drop.drop_unknown = true;  // cls.predictions.* is not part of BertForSequenceClassification
  const auto w2 = convert(dir, "f32", drop);
  EXPECT_TRUE(contains(w2, "the classification head (classifier.*)"));
  EXPECT_EQ(ModelFile::open(out()).contents().heads.resolved_kind(), HeadKind::kNone);
}

TEST_F(ConvertHf, TfRunSquadSpanHeadMatchesPyTorch) {
  // run_squad.py's checkpoint (written by tf_bundle_writer.py): cls/squad/output_weights [2, H]
  // and output_bias [2] become the span head; the reference is the float64 PyTorch forward of
  // the same weights with qa_outputs (tanh GELU: the original code's "gelu").
  const auto warnings = convert(model("tf1_squad"));
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_EQ(c.heads.resolved_kind(), HeadKind::kQuestionAnswering);
  EXPECT_FALSE(c.heads.mlm || c.heads.nsp);
  EXPECT_EQ(c.metadata.at("architecture"), "BertForQuestionAnswering");
  EXPECT_EQ(c.metadata.at("source_format"), "tf1-bundle");
  EXPECT_EQ(c.config.hidden_act, "gelu_new");
  // output_weights is stored as is ([2, H] is nn.Linear's [out, in]): bit for bit.
  const auto reader = open_tf_bundle(model("tf1_squad/bert_model.ckpt"));
  for (const auto& [tf, hf] :
       {std::pair<std::string, std::string>{"cls/squad/output_weights", "qa_outputs.weight"},
        {"cls/squad/output_bias", "qa_outputs.bias"}}) {
    size_t k = 0;
    while (reader->tensors()[k].name != tf) ++k;
    const std::vector<float> want = bytes_to_f32(reader->tensors()[k], reader->read(k));
    const TensorRecord& t = f.at(hf);
    EXPECT_EQ(t.shape, reader->tensors()[k].shape) << hf;
    EXPECT_EQ(tensor_to_f32(t), want) << hf;
  }
  expect_forward(out(), ref(), "gelu_new_f32");  // start / end logits, encoder and pooler
  // Exported to Hugging Face: BertForQuestionAnswering with qa_outputs, which converts back.
  const std::string dir = tmp_.file("hf");
  export_hf(out(), dir);
  EXPECT_EQ(read_json(dir + "/config.json")["architectures"][0], "BertForQuestionAnswering");
  const SafetensorsFile back = SafetensorsFile::open(dir + "/model.safetensors");
  const SafetensorsTensor* w = back.find("qa_outputs.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 36}));
  EXPECT_NE(back.find("qa_outputs.bias"), nullptr);
  convert(dir);
  expect_forward(out(), ref(), "gelu_new_f32", /*pooler=*/false);  // HF's class has no pooler
}

TEST_F(ConvertHf, OneLabelIsRegression) {
  convert(model("st_regression"));
  const ModelFile f = ModelFile::open(out());
  EXPECT_EQ(f.contents().heads.resolved_kind(), HeadKind::kRegression);
  EXPECT_EQ(f.contents().heads.labels, std::vector<std::string>{"score"});
  EXPECT_EQ(f.contents().heads.task, "stsb");
  expect_forward(out(), ref(), "gelu_f32");
  const std::string dir = tmp_.file("hf");
  export_hf(out(), dir);
  const json c = read_json(dir + "/config.json");
  EXPECT_EQ(c["problem_type"], "regression");
  EXPECT_EQ(c["id2label"]["0"], "score");
  // problem_type regression with three labels cannot be a regression head.
  const std::string bad = tmp_.file("bad");
  fs::copy(model("st_seqcls"), bad, fs::copy_options::recursive);
  json b = read_json(bad + "/config.json");
  b["problem_type"] = "regression";
  write_json(bad + "/config.json", b);
  EXPECT_NE(error_of([&] { convert(bad); }).find("regression has one output"), std::string::npos);
}

TEST_F(ConvertHf, TorchZipWithPositionIdsAndTiedDecoder) {
  convert(model("bin_zip_mlm"));
  const ModelFile f = ModelFile::open(out());
  EXPECT_EQ(f.contents().metadata.at("source_format"), "torch-zip");
  EXPECT_EQ(f.contents().metadata.at("converter.dropped"),
            "bert.embeddings.position_ids,cls.predictions.decoder.weight,cls.predictions.decoder.bias");
  EXPECT_EQ(f.find("bert.embeddings.position_ids"), nullptr);
  expect_forward(out(), ref(), "gelu_f32", /*pooler=*/false);
}

TEST_F(ConvertHf, UntiedDecoderIsRefused) {
  const std::string e = error_of([&] { convert(model("bad_decoder")); });
  EXPECT_NE(e.find("cls.predictions.decoder.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("differs from 'bert.embeddings.word_embeddings.weight'"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(ConvertHf, TorchZipF16AndShards) {
  convert(model("bin_zip_f16"));
  expect_forward(out(), ref(), "gelu_f16");
  convert(model("bin_sharded"));
  expect_forward(out(), ref(), "gelu_f32");
}

TEST_F(ConvertHf, LegacyPickleBareNamesGammaBeta) {
  const auto warnings = convert(model("bin_legacy_bare"));
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_EQ(c.metadata.at("source_format"), "torch-legacy");
  EXPECT_EQ(c.metadata.at("architecture"), "BertModel");  // inferred: the config has none
  EXPECT_EQ(c.metadata.at("architecture_inferred"), "true");
  EXPECT_FALSE(c.tokenizer.do_lower_case);
  EXPECT_EQ(c.tokenizer.strip_accents, std::optional<bool>(true));
  EXPECT_FALSE(c.tokenizer.tokenize_chinese_chars);
  ASSERT_NE(f.find("bert.encoder.layer.1.output.LayerNorm.weight"), nullptr);
  expect_forward(out(), ref(), "gelu_f32");
}

// --------------------------------------------------------------------------- export to HF ---

TEST_F(ConvertHf, HfToBrtToHfIsBitIdentical) {
  for (const std::string name : {"st_pretraining_f32", "st_seqcls", "st_tokcls", "st_qa", "st_regression",
                                 "st_pretraining_bf16"}) {
    convert(model(name), name == "st_pretraining_bf16" ? "bf16" : "f32");
    const std::string dir = tmp_.file("hf_" + name);
    export_hf(out(), dir);
    const SafetensorsFile src = SafetensorsFile::open(model(name + "/model.safetensors"));
    const SafetensorsFile back = SafetensorsFile::open(dir + "/model.safetensors");
    EXPECT_EQ(back.metadata().at("format"), "pt");
    ASSERT_EQ(back.tensors().size(), src.tensors().size()) << name;  // nothing added (no pooler for tokcls)
    for (const SafetensorsTensor& t : src.tensors()) {
      const SafetensorsTensor* b = back.find(t.name);
      ASSERT_NE(b, nullptr) << name << ": " << t.name;
      EXPECT_EQ(b->dtype, t.dtype);
      EXPECT_EQ(b->shape, t.shape);
      ASSERT_EQ(b->nbytes, t.nbytes);
      EXPECT_EQ(std::memcmp(b->data, t.data, t.nbytes), 0) << name << ": " << t.name;
    }
    const json cfg = read_json(dir + "/config.json"), orig = read_json(model(name + "/config.json"));
    EXPECT_EQ(cfg["architectures"], orig["architectures"]) << name;
    for (const char* k : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "intermediate_size", "hidden_act", "max_position_embeddings",
                          "type_vocab_size", "layer_norm_eps", "pad_token_id", "initializer_range"})
      EXPECT_EQ(cfg[k], orig[k]) << name << ": " << k;  // floats as written: 0.02, not 0.0199999...
    if (orig.contains("id2label")) {
      for (const auto& [id, label] : orig["id2label"].items()) EXPECT_EQ(cfg["id2label"][id], label) << name;
      for (const auto& [id, label] : orig["id2label"].items()) EXPECT_EQ(cfg["label2id"][label.get<std::string>()], std::stoi(id));
    }
    // The exported folder converts again to the same model.
    std::ifstream a(model(name + "/vocab.txt")), b(dir + "/vocab.txt");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
    const json tok = read_json(dir + "/tokenizer_config.json");
    EXPECT_EQ(tok["do_lower_case"], true);
    EXPECT_EQ(tok["model_max_length"], 24);
  }
}

TEST_F(ConvertHf, ExportOfBertModelUsesBareNames) {
  convert(model("bin_legacy_bare"));
  const std::string dir = tmp_.file("hf");
  export_hf(out(), dir);
  const SafetensorsFile back = SafetensorsFile::open(dir + "/model.safetensors");
  EXPECT_NE(back.find("embeddings.word_embeddings.weight"), nullptr);
  EXPECT_NE(back.find("encoder.layer.0.attention.output.LayerNorm.weight"), nullptr);
  EXPECT_EQ(read_json(dir + "/config.json")["architectures"][0], "BertModel");
  const json tok = read_json(dir + "/tokenizer_config.json");
  EXPECT_EQ(tok["do_lower_case"], false);
  EXPECT_EQ(tok["strip_accents"], true);
  EXPECT_EQ(tok["tokenize_chinese_chars"], false);
}

// ------------------------------------------------------------------------ malformed inputs ---

class ConvertHfBad : public ConvertHf {
 protected:
  // A copy of st_pretraining_f32 to break.
  std::string copy(const std::string& name = "st_pretraining_f32") {
    const std::string dir = tmp_.file("in");
    fs::copy(model(name), dir, fs::copy_options::recursive);
    return dir;
  }
};

TEST_F(ConvertHfBad, TfSquadNextToAClassifier) {
  const std::string e = error_of([&] { convert(model("tf1_two_heads")); });
  EXPECT_NE(e.find("cls/squad/output_"), std::string::npos) << e;
  EXPECT_NE(e.find("next to a classifier"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(ConvertHfBad, MissingConfig) {
  const std::string dir = copy();
  fs::remove(dir + "/config.json");
  EXPECT_NE(error_of([&] { convert(dir); }).find("config.json is missing"), std::string::npos);
}

TEST_F(ConvertHfBad, ConfigWithoutHiddenSize) {
  const std::string dir = copy();
  json c = read_json(dir + "/config.json");
  c.erase("hidden_size");
  write_json(dir + "/config.json", c);
  EXPECT_NE(error_of([&] { convert(dir); }).find("field 'hidden_size' is missing"), std::string::npos);
}

// A value nested 200,000 deep is quoted by its kind (json_excerpt), not dumped: dumping it
// overflowed the stack (exit 139 instead of an error).
TEST_F(ConvertHfBad, DeeplyNestedConfigValueIsAnError) {
  const std::string dir = copy();
  json c = read_json(dir + "/config.json");
  c.erase("hidden_size");
  std::string text = c.dump();
  text.insert(1, "\"hidden_size\":" + std::string(200000, '[') + std::string(200000, ']') + ",");
  std::ofstream(dir + "/config.json") << text;
  const std::string e = error_of([&] { convert(dir); });
  EXPECT_NE(e.find("field 'hidden_size' must be an integer, got an array of 1 entries"),
            std::string::npos)
      << e.substr(0, 300);
}

TEST_F(ConvertHfBad, ShapeMismatchWithConfig) {
  const std::string dir = copy();
  json c = read_json(dir + "/config.json");
  c["intermediate_size"] = 40;
  write_json(dir + "/config.json", c);
  const std::string e = error_of([&] { convert(dir); });
  EXPECT_NE(e.find("bert.encoder.layer.0.intermediate.dense.weight' has shape [37, 36]"), std::string::npos) << e;
  EXPECT_NE(e.find("implies [40, 36]"), std::string::npos) << e;
}

TEST_F(ConvertHfBad, UnknownTensorsNamedOrDropped) {
  // st_seqcls weights under a BertModel config: classifier.* are unknown to it.
  const std::string dir = copy("st_seqcls");
  json c = read_json(dir + "/config.json");
  c["architectures"] = {"BertModel"};
  write_json(dir + "/config.json", c);
  const std::string e = error_of([&] { convert(dir); });
  EXPECT_NE(e.find("classifier.weight, classifier.bias"), std::string::npos) << e;
  EXPECT_NE(e.find("--drop-unknown"), std::string::npos) << e;
  ConvertOptions opts;
  opts.drop_unknown = true;
  EXPECT_TRUE(contains(convert(dir, "f32", opts), "dropped"));
  EXPECT_EQ(ModelFile::open(out()).find("classifier.weight"), nullptr);
}

TEST_F(ConvertHfBad, UnsupportedArchitectureAndActivation) {
  const std::string dir = copy();
  json c = read_json(dir + "/config.json");
  c["architectures"] = {"BertForMultipleChoice"};
  write_json(dir + "/config.json", c);
  EXPECT_NE(error_of([&] { convert(dir); }).find("'BertForMultipleChoice' is not supported"), std::string::npos);
  c["architectures"] = {"BertForPreTraining"};
  c["hidden_act"] = "relu";
  write_json(dir + "/config.json", c);
  EXPECT_NE(error_of([&] { convert(dir); }).find("hidden_act 'relu' is not supported"), std::string::npos);
}

TEST_F(ConvertHfBad, VocabLongerIsCutShorterIsKept) {
  const std::string dir = copy();
  { std::ofstream(dir + "/vocab.txt", std::ios::app) << "extra1\nextra2\n"; }
  EXPECT_TRUE(contains(convert(dir), "the last 2 (from 'extra1')"));
  EXPECT_EQ(ModelFile::open(out()).contents().tokenizer.vocab.size(), 43u);
  // Shorter: ids past the vocab keep their (unused) embedding rows, as padded vocabularies do.
  { std::ofstream(dir + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n"; }
  EXPECT_TRUE(convert(dir).empty());
  EXPECT_EQ(ModelFile::open(out()).contents().tokenizer.vocab.size(), 6u);
  { std::ofstream(dir + "/vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n"; }
  EXPECT_NE(error_of([&] { convert(dir); }).find("special token '[MASK]' is not in the vocab"), std::string::npos);
  fs::remove(dir + "/vocab.txt");
  EXPECT_NE(error_of([&] { convert(dir); }).find("pass --vocab FILE"), std::string::npos);
}

TEST_F(ConvertHfBad, ShardIndexProblems) {
  const std::string dir = copy("st_sharded");
  json idx = read_json(dir + "/model.safetensors.index.json");
  const std::string first = idx["weight_map"].begin().key();
  idx["weight_map"][first] = "model-00002-of-00002.safetensors";  // wrong shard
  write_json(dir + "/model.safetensors.index.json", idx);
  EXPECT_NE(error_of([&] { convert(dir); }).find("which does not hold it"), std::string::npos);
  idx["weight_map"][first] = "../model-00001-of-00002.safetensors";
  write_json(dir + "/model.safetensors.index.json", idx);
  EXPECT_NE(error_of([&] { convert(dir); }).find("not a file name in the same folder"), std::string::npos);
  idx["weight_map"][first] = "model-00001-of-00002.safetensors";
  write_json(dir + "/model.safetensors.index.json", idx);
  fs::remove(dir + "/model-00002-of-00002.safetensors");
  EXPECT_NE(error_of([&] { convert(dir); }).find("shard 'model-00002-of-00002.safetensors' is missing"),
            std::string::npos);
}

// ------------------------------------------------------------------- real folders (shared) ---

TEST_F(ConvertHf, RealSafetensorsWithoutPooler) {
  const std::string dir = test::shared_dir() + "/ckpt/hf/inference-server_tiny_bert";
  BERTRT_REQUIRE_PATH(dir);
  const auto warnings = convert(dir);
  EXPECT_TRUE(contains(warnings, "no pooler"));
  expect_same_bytes(out(), SafetensorsFile::open(dir + "/model.safetensors"));
  const ModelFile f = ModelFile::open(out());
  EXPECT_EQ(f.contents().tensors.size(), 37u + 2u);  // 37 read + the initialised pooler
  EXPECT_FALSE(f.contents().tokenizer.do_lower_case);
  EXPECT_EQ(f.contents().metadata.at("tokenizer.model_max_length"), "128");
  const std::string fwd = tmp_.file("fwd.safetensors");
  ASSERT_EQ(run_python("--forward-of " + dir + " --out " + fwd), 0);
  expect_forward(out(), SafetensorsFile::open(fwd), "", /*pooler=*/false);
}

TEST_F(ConvertHf, RealTransformersZipTokenClassification) {
  const std::string dir = test::shared_dir() + "/ckpt/hf/camphr_ner_bert";
  BERTRT_REQUIRE_PATH(dir);
  const auto warnings = convert(dir);
  EXPECT_TRUE(contains(warnings, "405 tokens but vocab_size is 402"));  // as released
  EXPECT_TRUE(contains(warnings, "no pooler"));
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_EQ(c.metadata.at("architecture"), "BertForTokenClassification");
  EXPECT_EQ(c.metadata.at("converter.dropped"), "bert.embeddings.position_ids");
  EXPECT_EQ(c.heads.resolved_kind(), HeadKind::kTokenClassification);
  EXPECT_EQ(c.heads.labels.at(3), "B-PER");
  ASSERT_NE(f.find("classifier.weight"), nullptr);
  EXPECT_EQ(f.find("classifier.weight")->shape, (std::vector<int64_t>{9, 16}));
  const std::string fwd = tmp_.file("fwd.safetensors");
  ASSERT_EQ(run_python("--forward-of " + dir + " --out " + fwd), 0);
  expect_forward(out(), SafetensorsFile::open(fwd), "", /*pooler=*/false);
}

TEST_F(ConvertHf, RealLegacyPickleNeedsAVocab) {
  const std::string dir = test::shared_dir() + "/ckpt/hf/camphr_bert_2019-10-20a";
  BERTRT_REQUIRE_PATH(dir);
  EXPECT_NE(error_of([&] { convert(dir); }).find("vocab.txt is missing"), std::string::npos);
  // The folder ships no vocab: give one of vocab_size tokens.
  const std::string vocab = tmp_.file("vocab.txt");
  {
    std::ofstream v(vocab);
    v << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = 5; i < 121; ++i) v << "tok" << i << "\n";
  }
  ConvertOptions opts;
  opts.vocab = vocab;
  EXPECT_TRUE(convert(dir, "f32", opts).empty());
  const ModelFile f = ModelFile::open(out());
  EXPECT_EQ(f.contents().metadata.at("source_format"), "torch-legacy");
  EXPECT_EQ(f.contents().metadata.at("architecture"), "BertModel");
  EXPECT_FALSE(f.contents().tokenizer.do_lower_case);
  const std::string fwd = tmp_.file("fwd.safetensors");
  ASSERT_EQ(run_python("--forward-of " + dir + " --out " + fwd), 0);
  expect_forward(out(), SafetensorsFile::open(fwd), "", /*pooler=*/false);
}

TEST_F(ConvertHf, TfOriginTanhGeluMatchesPyTorch) {
  const std::string dir = test::shared_dir() + "/ckpt/tf1/keras-bert-tiny";
  BERTRT_REQUIRE_PATH(dir);
  EXPECT_TRUE(contains(convert(dir), "no tokenizer_config.json"));
  const ModelFile f = ModelFile::open(out());
  const auto& c = f.contents();
  EXPECT_EQ(c.config.hidden_act, "gelu_new");  // the original code's gelu is the tanh form
  EXPECT_TRUE(c.heads.mlm && c.heads.nsp);
  EXPECT_EQ(c.metadata.at("source_format"), "tf1-bundle");
  EXPECT_EQ(c.tokenizer.vocab.size(), 15u);
  // A TF kernel [in, out] arrives as nn.Linear's [out, in].
  const auto reader = open_tf_bundle(dir + "/bert_model.ckpt");
  size_t k = 0;
  while (reader->tensors()[k].name != "bert/encoder/layer_0/intermediate/dense/kernel") ++k;
  const std::vector<float> kernel = bytes_to_f32(reader->tensors()[k], reader->read(k));
  const TensorRecord& w = f.at("bert.encoder.layer.0.intermediate.dense.weight");
  ASSERT_EQ(w.shape, (std::vector<int64_t>{16, 4}));
  const std::vector<float> weight = tensor_to_f32(w);
  for (int o = 0; o < 16; ++o)
    for (int i = 0; i < 4; ++i) ASSERT_EQ(weight[o * 4 + i], kernel[i * 16 + o]) << o << "," << i;
  // Forward vs float64 PyTorch on the same weights (exported to HF, read back by the reference).
  const std::string hf = tmp_.file("hf");
  export_hf(out(), hf);
  const std::string fwd = tmp_.file("fwd.safetensors");
  ASSERT_EQ(run_python("--forward-of " + hf + " --out " + fwd), 0);
  expect_forward(out(), SafetensorsFile::open(fwd), "", /*pooler=*/false);
}

TEST_F(ConvertHf, TfIndexWithoutDataNamesTheMissingShard) {
  const std::string dir = test::shared_dir() + "/ckpt/tf1-index/google-chinese_L-12_H-768_A-12";
  BERTRT_REQUIRE_PATH(dir);
  const std::string e = error_of([&] { convert(dir); });
  EXPECT_NE(e.find("bert_model.ckpt.data-00000-of-00001: missing data shard"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace bertrt::convert
