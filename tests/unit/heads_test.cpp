// The fine-tuning heads beyond PyTorch parity (bert_reference_test): HeadsConfig rules, the
// parameter layout of each kind, set_heads() switching with the encoder kept, loss conventions on
// hand-checkable cases, bad labels, and the head kind in the model file (round trip, files written
// before the field existed, a kind from a newer build).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "backends/backend.h"
#include "bertrt_generated.h"
#include "core/error.h"
#include "io/model_file.h"
#include "io/model_io.h"
#include "model/bert_model.h"
#include "test_util.h"

namespace bertrt {
namespace {

BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = 13;
  c.hidden_size = 8;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 11;
  c.max_position_embeddings = 16;
  return c;
}

HeadsConfig heads_of(HeadKind kind, std::vector<std::string> labels = {}) {
  HeadsConfig h;
  h.kind = kind;
  h.labels = std::move(labels);
  return h;
}

template <typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(HeadsConfigTest, KindsNamesAndOutputs) {
  for (HeadKind k : {HeadKind::kNone, HeadKind::kSequenceClassification, HeadKind::kRegression,
                     HeadKind::kTokenClassification, HeadKind::kQuestionAnswering})
    EXPECT_EQ(parse_head_kind(head_kind_name(k)), k);
  expect_error([] { parse_head_kind("ner"); }, "token_classification");

  HeadsConfig legacy;  // labels without a kind: what code and files before the kind meant
  legacy.labels = {"neg", "pos"};
  EXPECT_EQ(legacy.resolved_kind(), HeadKind::kSequenceClassification);
  EXPECT_EQ(legacy.num_labels(), 2);
  EXPECT_TRUE(legacy.classifier());
  EXPECT_EQ(HeadsConfig{}.num_labels(), 0);
  EXPECT_FALSE(HeadsConfig{}.classifier());
  EXPECT_EQ(heads_of(HeadKind::kRegression).num_labels(), 1);
  EXPECT_TRUE(heads_of(HeadKind::kRegression).classifier());
  EXPECT_EQ(heads_of(HeadKind::kTokenClassification, {"O", "B-PER", "I-PER"}).num_labels(), 3);
  EXPECT_EQ(heads_of(HeadKind::kQuestionAnswering).num_labels(), 2);
  EXPECT_FALSE(heads_of(HeadKind::kQuestionAnswering).classifier());
}

TEST(HeadsConfigTest, ValidateNamesTheProblem) {
  expect_error([] { heads_of(HeadKind::kTokenClassification).validate(); }, "at least 2 labels");
  expect_error([] { heads_of(HeadKind::kSequenceClassification, {"a"}).validate(); }, "regression");
  expect_error([] { heads_of(HeadKind::kRegression, {"a", "b"}).validate(); }, "one output");
  expect_error([] { heads_of(HeadKind::kQuestionAnswering, {"a"}).validate(); }, "no labels");
  expect_error(
      [] {
        heads_of(HeadKind::kSequenceClassification, {"a", "b", "a"}).validate();
      },
      "'a' appears twice");
  heads_of(HeadKind::kRegression, {"similarity"}).validate();  // a name for the output is fine
  expect_error([] { BertModel(tiny_config(), heads_of(HeadKind::kQuestionAnswering, {"x"})); },
               "no labels");
}

// HF names and shapes: classifier [K, H] (K = 1 for regression), qa_outputs [2, H].
TEST(HeadsLayoutTest, EachKindCarriesItsHuggingFaceTensors) {
  const BertConfig c = tiny_config();
  auto shape = [&](const HeadsConfig& h, const std::string& name) {
    const ParamLayout layout = bert_param_layout(c, h);
    const ParamInfo* p = layout.find(name);
    return p ? p->shape : std::vector<int64_t>{};
  };
  const HeadsConfig reg = heads_of(HeadKind::kRegression),
                    qa = heads_of(HeadKind::kQuestionAnswering),
                    tok = heads_of(HeadKind::kTokenClassification, {"O", "B", "I"});
  EXPECT_EQ(shape(reg, "classifier.weight"), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(shape(reg, "classifier.bias"), (std::vector<int64_t>{1}));
  EXPECT_EQ(shape(tok, "classifier.weight"), (std::vector<int64_t>{3, 8}));
  EXPECT_EQ(shape(qa, "qa_outputs.weight"), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(shape(qa, "qa_outputs.bias"), (std::vector<int64_t>{2}));
  EXPECT_TRUE(shape(qa, "classifier.weight").empty());
  EXPECT_TRUE(shape(tok, "qa_outputs.weight").empty());
  EXPECT_EQ(bert_param_layout(c, qa).params().size(),
            bert_param_layout(c, HeadsConfig{}).params().size() + 2);
}

std::vector<float> param(const BertModel& m, const std::string& name) {
  const ParamInfo& p = m.layout().at(name);
  return std::vector<float>(m.params() + p.offset, m.params() + p.offset + p.numel);
}

TEST(SetHeadsTest, SwitchesKeepTheEncoderAndRenewTheTaskHeadWhenItsKindChanges) {
  HeadsConfig pretrain;
  pretrain.mlm = pretrain.nsp = true;
  BertModel m(tiny_config(), pretrain);
  m.init_weights(1);
  const std::string enc = "bert.encoder.layer.0.attention.self.query.weight";
  const auto query = param(m, enc), words = param(m, "bert.embeddings.word_embeddings.weight"),
             pooler = param(m, "bert.pooler.dense.weight");

  m.set_heads(heads_of(HeadKind::kTokenClassification, {"O", "B", "I"}), 7);
  EXPECT_EQ(m.heads().kind, HeadKind::kTokenClassification);
  EXPECT_EQ(m.layout().find("cls.predictions.bias"), nullptr);
  EXPECT_EQ(param(m, enc), query);
  EXPECT_EQ(param(m, "bert.embeddings.word_embeddings.weight"), words);
  EXPECT_EQ(param(m, "bert.pooler.dense.weight"), pooler);
  const auto tok_w = param(m, "classifier.weight");
  EXPECT_TRUE(std::any_of(tok_w.begin(), tok_w.end(), [](float x) { return x != 0; }));
  const auto bias = param(m, "classifier.bias");
  EXPECT_TRUE(std::all_of(bias.begin(), bias.end(), [](float x) { return x == 0; }));

  // Same kind and shape: the trained classifier stays (fine-tuning resumed with the same labels).
  m.set_heads(heads_of(HeadKind::kTokenClassification, {"O", "B", "I"}), 8);
  EXPECT_EQ(param(m, "classifier.weight"), tok_w);
  // Same shape, other kind: a token classifier is no [CLS] classifier, so it is drawn afresh.
  m.set_heads(heads_of(HeadKind::kSequenceClassification, {"a", "b", "c"}), 9);
  EXPECT_NE(param(m, "classifier.weight"), tok_w);
  m.set_heads(heads_of(HeadKind::kQuestionAnswering), 10);
  EXPECT_EQ(m.layout().find("classifier.weight"), nullptr);
  EXPECT_EQ(param(m, "qa_outputs.weight").size(), 16u);
  EXPECT_EQ(param(m, enc), query);
  // Labels without a kind (code written before HeadKind) still mean sequence classification.
  HeadsConfig legacy;
  legacy.labels = {"neg", "pos"};
  m.set_heads(legacy, 11);
  EXPECT_EQ(m.heads().kind, HeadKind::kSequenceClassification);
  EXPECT_EQ(param(m, "classifier.weight").size(), 16u);
}

// A kept classifier whose labels come in another order (a converted checkpoint's id2label): each
// label keeps its own row and bias, so the model's scores per label name are unchanged (the rows
// were kept in place and renamed by index: a converted NER model's B-MISC became B-PER).
TEST(SetHeadsTest, AKeptClassifierMatchesItsLabelsByName) {
  for (HeadKind kind : {HeadKind::kSequenceClassification, HeadKind::kTokenClassification}) {
    BertModel m(tiny_config(), heads_of(kind, {"O", "B-PER", "I-PER"}));
    m.init_weights(3);
    float* bias = m.params() + m.layout().at("classifier.bias").offset;
    bias[0] = 0.5f, bias[1] = -1.5f, bias[2] = 2.5f;  // init_weights zeroes biases
    const auto w = param(m, "classifier.weight");
    m.set_heads(heads_of(kind, {"I-PER", "O", "B-PER"}), 4);
    EXPECT_EQ(m.heads().labels, (std::vector<std::string>{"I-PER", "O", "B-PER"}));
    EXPECT_EQ(param(m, "classifier.bias"), (std::vector<float>{2.5f, 0.5f, -1.5f}));
    const auto v = param(m, "classifier.weight");
    const size_t H = w.size() / 3;
    for (auto [to, from] : {std::pair{0, 2}, std::pair{1, 0}, std::pair{2, 1}})
      EXPECT_TRUE(std::equal(v.begin() + to * H, v.begin() + (to + 1) * H, w.begin() + from * H))
          << "row of label " << m.heads().labels[to];
    // Other names of the same count are a new head's labels by index, as before.
    m.set_heads(heads_of(kind, {"x", "y", "z"}), 5);
    EXPECT_EQ(param(m, "classifier.weight"), v);
  }
}

struct Batch {
  int B = 2, T = 4;
  std::vector<int32_t> ids{2, 5, 6, 3, 2, 7, 3, 0}, types{0, 0, 0, 0, 0, 0, 0, 0},
      mask{1, 1, 1, 1, 1, 1, 1, 0};
  EncoderInputs inputs() const { return {B, T, ids.data(), types.data(), mask.data()}; }
};

// MSELoss(mean) by hand from the model's own scores.
TEST(HeadsLossTest, RegressionIsMeanSquaredError) {
  BertModel m(tiny_config(), heads_of(HeadKind::kRegression));
  m.init_weights(3);
  Batch b;
  const std::vector<float> scores{1.5f, -0.25f};
  Targets t;
  t.scores = scores.data();
  auto be = make_backend("reference");
  const ForwardResult r = m.forward(*be, b.inputs(), t, false);
  ASSERT_EQ(m.logits().size(), 2u);
  const double want =
      (std::pow(double(r.logits[0]) - 1.5, 2) + std::pow(double(r.logits[1]) + 0.25, 2)) / 2;
  EXPECT_NEAR(r.loss, want, 1e-12 * want);
  EXPECT_EQ(r.cls.count, 2);
}

// Token classification: −100 rows drop out of the mean; a label ≥ K is an error, not a wild read.
TEST(HeadsLossTest, TokenClassificationCountsLabelledTokensOnly) {
  BertModel m(tiny_config(), heads_of(HeadKind::kTokenClassification, {"O", "B", "I"}));
  m.init_weights(4);
  Batch b;
  std::vector<int32_t> labels{-100, 1, -100, -100, -100, 2, -100, -100};
  Targets t;
  t.token_labels = labels.data();
  auto be = make_backend("reference");
  const ForwardResult r = m.forward(*be, b.inputs(), t, false);
  ASSERT_EQ(m.logits().size(), size_t(b.B * b.T * 3));
  auto ce = [&](int row, int label) {
    const float* z = r.logits + row * 3;
    double s = 0;
    for (int k = 0; k < 3; ++k) s += std::exp(double(z[k]));
    return std::log(s) - z[label];
  };
  EXPECT_EQ(r.cls.count, 2);
  EXPECT_NEAR(r.loss, (ce(1, 1) + ce(5, 2)) / 2, 1e-6);
  labels[5] = 3;
  expect_error([&] { m.forward(*be, b.inputs(), t, false); }, "label 3 at row 5 is outside [0, 3)");
}

// HF clamps positions to [0, T] and ignores T; with nothing left the loss is 0 (HF: NaN).
TEST(HeadsLossTest, SpanPositionsPastTheSequenceAreIgnored) {
  BertModel m(tiny_config(), heads_of(HeadKind::kQuestionAnswering));
  m.init_weights(5);
  Batch b;
  const std::vector<int32_t> start{4, 9}, end{5, 6};
  Targets t;
  t.start_positions = start.data();
  t.end_positions = end.data();
  auto be = make_backend("reference");
  ForwardResult r = m.forward(*be, b.inputs(), t, true);
  ASSERT_EQ(m.start_logits().size(), 8u);
  EXPECT_EQ(r.logits, nullptr);
  EXPECT_EQ(r.cls.count, 0);
  EXPECT_EQ(r.loss, 0.0);
  m.grads();
  m.zero_grad();
  m.backward(*be);  // no target counted: nothing to propagate, and nothing non-finite
  const float* g = m.grads();
  EXPECT_TRUE(std::all_of(g, g + m.layout().total(), [](float x) { return x == 0; }));
}

TokenizerSpec tiny_vocab() {
  TokenizerSpec s;
  s.vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "d", "e", "f", "g", "h"};
  return s;
}

class HeadsFileTest : public ::testing::TestWithParam<HeadKind> {};

// save_model → load_model keeps the kind, the labels and every tensor.
TEST_P(HeadsFileTest, SaveLoadRoundTrip) {
  const HeadKind kind = GetParam();
  HeadsConfig h = heads_of(kind);
  if (kind == HeadKind::kSequenceClassification || kind == HeadKind::kTokenClassification)
    h.labels = {"x", "y", "z"};
  if (kind == HeadKind::kRegression) h.labels = {"similarity"};
  h.task = "demo";
  h.mlm = kind == HeadKind::kNone;
  BertModel m(tiny_config(), h);
  m.init_weights(6);
  test::TempDir dir;
  const std::string path = dir.file("m.brt");
  save_model(path, m, *make_tokenizer(tiny_vocab()), {});
  const LoadedModel l = load_model(path);
  EXPECT_EQ(l.file.contents().heads.kind, kind);
  EXPECT_EQ(l.model->heads().kind, kind);
  EXPECT_EQ(l.model->heads().labels, h.labels);
  EXPECT_EQ(l.model->heads().task, "demo");
  ASSERT_EQ(l.model->layout().total(), m.layout().total());
  EXPECT_TRUE(std::equal(m.params(), m.params() + m.layout().total(), l.model->params()));
}

INSTANTIATE_TEST_SUITE_P(Kinds, HeadsFileTest,
                         ::testing::Values(HeadKind::kNone, HeadKind::kSequenceClassification,
                                           HeadKind::kRegression, HeadKind::kTokenClassification,
                                           HeadKind::kQuestionAnswering),
                         [](const auto& info) { return std::string(head_kind_name(info.param)); });

// A file as format 1 wrote it before Heads.kind existed (the field absent), or with a kind this
// build does not know (`kind` < 0 = absent). Such files predate checksums too: they are opened
// with the checks skipped (unchecked, below), as a user vouching for them would.
std::string write_heads_only_file(const std::string& path, std::vector<std::string> labels,
                                  int kind) {
  flatbuffers::FlatBufferBuilder b;
  const auto config = fb::CreateConfigDirect(b, 13, 8, 1, 2, 11, "gelu", 16);
  std::vector<std::string> vocab = tiny_vocab().vocab;
  const auto tok = fb::CreateTokenizer(b, b.CreateVectorOfStrings(vocab));
  const auto task = b.CreateString("sst2");
  const auto labs = b.CreateVectorOfStrings(labels);
  fb::HeadsBuilder hb(b);
  hb.add_mlm(true);
  hb.add_task(task);
  hb.add_labels(labs);
  if (kind >= 0) hb.add_kind(static_cast<fb::HeadKind>(kind));
  const auto heads = hb.Finish();
  fb::ModelBuilder mb(b);
  mb.add_format_version(1);
  mb.add_config(config);
  mb.add_tokenizer(tok);
  mb.add_heads(heads);
  fb::FinishSizePrefixedModelBuffer(b, mb.Finish());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  return path;
}

const OpenOptions unchecked{false};

TEST(HeadsFileCompatTest, FilesWithoutAKindReadAsBefore) {
  test::TempDir dir;
  const ModelFile f =
      ModelFile::open(write_heads_only_file(dir.file("old.brt"), {"neg", "pos"}, -1), unchecked);
  EXPECT_EQ(f.contents().heads.kind, HeadKind::kSequenceClassification);
  EXPECT_EQ(f.contents().heads.labels, (std::vector<std::string>{"neg", "pos"}));
  EXPECT_TRUE(f.contents().heads.mlm);
  const ModelFile g = ModelFile::open(write_heads_only_file(dir.file("mlm.brt"), {}, -1), unchecked);
  EXPECT_EQ(g.contents().heads.kind, HeadKind::kNone);
  EXPECT_FALSE(g.contents().heads.classifier());
}

TEST(HeadsFileCompatTest, UnknownOrInconsistentKindIsNamed) {
  test::TempDir dir;
  const std::string newer = write_heads_only_file(dir.file("newer.brt"), {}, 9);
  expect_error([&] { ModelFile::open(newer, unchecked); }, "newer.brt: heads.kind 9 is unknown");
  const std::string bad =
      write_heads_only_file(dir.file("bad.brt"), {"a"}, int(fb::HeadKind::question_answering));
  expect_error([&] { ModelFile::open(bad, unchecked); }, "bad.brt: heads: question_answering takes no labels");
}

}  // namespace
}  // namespace bertrt
