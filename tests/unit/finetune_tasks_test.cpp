// Fine-tuning every task family (train/task_batch, task_inference, task_data, finetune,
// tasks/task_definition): batches padded as documented (−100 token labels, [PAD] ids, zero mask),
// outputs that do not depend on the padding of the batch they ran in, metrics per task on
// hand-checkable outputs, the task definition round trip through JSON, and a tiny model that
// learns each family's toy data to perfect scores (so targets reach the right head).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <fstream>

#include "backends/backend.h"
#include "core/error.h"
#include "model/bert_model.h"
#include "tasks/conll.h"
#include "tasks/task_definition.h"
#include "test_util.h"
#include "train/finetune.h"
#include "train/schedule.h"
#include "train/task_batch.h"
#include "train/task_data.h"
#include "train/task_inference.h"

namespace bertrt {
namespace {

template <typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// --- batches ----------------------------------------------------------------------------------------

TEST(TaskBatchTest, SequenceBatchPadsToTheLongestAndKeepsTargets) {
  std::vector<EncodedExample> items = {{{101, 5, 102}, {0, 0, 0}, 1, 0},
                                       {{101, 6, 102, 7, 8, 102}, {0, 0, 0, 1, 1, 1}, 0, 0},
                                       {{101, 9, 102}, {0, 0, 0}, -1, 2.5f}};
  const std::vector<size_t> order = {2, 1, 0};
  const TaskBatch b = make_sequence_batch(items, order, 1, 8, /*pad=*/0, /*regression=*/false);
  ASSERT_EQ(b.B, 2);  // order[1..3): items 1 and 0
  ASSERT_EQ(b.T, 6);
  EXPECT_EQ(b.input_ids, (std::vector<int32_t>{101, 6, 102, 7, 8, 102, 101, 5, 102, 0, 0, 0}));
  EXPECT_EQ(b.token_type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(b.attention_mask, (std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(b.labels, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(b.scores.empty());
  EXPECT_EQ(b.real_tokens(), 9);
  const Targets t = b.targets();
  EXPECT_EQ(t.labels, b.labels.data());
  EXPECT_EQ(t.scores, nullptr);
  EXPECT_EQ(t.token_labels, nullptr);
  EXPECT_EQ(t.start_positions, nullptr);

  const TaskBatch r = make_sequence_batch(items, order, 0, 1, 0, /*regression=*/true);
  EXPECT_EQ(r.B, 1);
  EXPECT_EQ(r.scores, (std::vector<float>{2.5f}));
  EXPECT_TRUE(r.labels.empty());
  EXPECT_EQ(r.targets().scores, r.scores.data());
  EXPECT_EQ(r.targets().labels, nullptr);
}

TEST(TaskBatchTest, NerBatchPadsLabelsWithIgnore) {
  NerFeature a, c;
  a.input_ids = {101, 5, 6, 102};
  a.token_type_ids = {0, 0, 0, 0};
  a.labels = {kIgnoreLabel, 3, kIgnoreLabel, kIgnoreLabel};
  c.input_ids = {101, 7, 102};
  c.token_type_ids = {0, 0, 0};
  c.labels = {kIgnoreLabel, 0, kIgnoreLabel};
  const TaskBatch b = make_ner_batch({a, c}, {0, 1}, 0, 4, 0);
  ASSERT_EQ(b.T, 4);
  EXPECT_EQ(b.token_labels, (std::vector<int32_t>{-100, 3, -100, -100, -100, 0, -100, -100}));
  EXPECT_EQ(b.input_ids, (std::vector<int32_t>{101, 5, 6, 102, 101, 7, 102, 0}));
  EXPECT_EQ(b.targets().token_labels, b.token_labels.data());
  EXPECT_EQ(b.targets().labels, nullptr);
}

TEST(TaskBatchTest, SquadBatchCarriesPositions) {
  SquadFeature a, c;
  a.input_ids = {101, 5, 102, 6, 7, 102};
  a.token_type_ids = {0, 0, 0, 1, 1, 1};
  a.start_position = 3;
  a.end_position = 4;
  c.input_ids = {101, 5, 102, 8, 102};
  c.token_type_ids = {0, 0, 0, 1, 1};
  const TaskBatch b = make_squad_batch({a, c}, {1, 0}, 0, 2, 0);
  ASSERT_EQ(b.T, 6);
  EXPECT_EQ(b.start_positions, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(b.end_positions, (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(b.token_type_ids, (std::vector<int32_t>{0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1}));
  const Targets t = b.targets();
  EXPECT_EQ(t.start_positions, b.start_positions.data());
  EXPECT_EQ(t.end_positions, b.end_positions.data());
}

// Rows of given lengths, for the epoch order.
class LengthsOnly : public TaskData {
 public:
  explicit LengthsOnly(std::vector<size_t> n) : n_(std::move(n)) {}
  size_t size() const override { return n_.size(); }
  size_t length(size_t i) const override { return n_[i]; }
  TaskBatch batch(const std::vector<size_t>&, size_t, int) const override { return {}; }
  TaskMetrics evaluate(BertModel&, Backend&, int) const override { return {}; }
  std::string summary() const override { return ""; }

 private:
  std::vector<size_t> n_;
};

TEST(EpochOrderTest, GroupByLengthSortsWithinRunsOf50Batches) {
  std::vector<size_t> lengths(1000);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 3 + (i * 7919) % 61;
  const LengthsOnly data(lengths);
  std::mt19937_64 a(9), b(9);
  const auto plain = epoch_order(data, 4, false, a);
  const auto grouped = epoch_order(data, 4, true, b);
  // The same shuffle, then each run of 50 · 4 = 200 rows sorted longest first (stable).
  ASSERT_EQ(grouped.size(), 1000u);
  for (size_t g = 0; g < 1000; g += 200) {
    std::vector<size_t> expect(plain.begin() + g, plain.begin() + g + 200);
    std::stable_sort(expect.begin(), expect.end(),
                     [&](size_t x, size_t y) { return lengths[x] > lengths[y]; });
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), grouped.begin() + g)) << g;
  }
  std::vector<size_t> sorted = grouped;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);  // a permutation
  // A partial last group is sorted too.
  const LengthsOnly small({5, 9, 1});
  std::mt19937_64 c(1);
  const auto o = epoch_order(small, 8, true, c);
  EXPECT_EQ(o, (std::vector<size_t>{1, 0, 2}));
}

// --- task definitions --------------------------------------------------------------------------------

TEST(TaskDefinitionTest, PresetsAndFamilies) {
  EXPECT_EQ(make_task_definition("sst2").kind, HeadKind::kSequenceClassification);
  EXPECT_FALSE(make_task_definition("sst2").pair);
  EXPECT_TRUE(make_task_definition("mrpc").pair);
  EXPECT_EQ(make_task_definition("stsb").kind, HeadKind::kRegression);
  EXPECT_TRUE(make_task_definition("stsb").labels.empty());
  EXPECT_EQ(make_task_definition("rte").labels, (std::vector<std::string>{"entailment", "not_entailment"}));
  EXPECT_EQ(make_task_definition("conll2003").family(), TaskFamily::kToken);
  EXPECT_EQ(make_task_definition("conll2003").labels, conll2003_labels());
  const TaskDefinition q = make_task_definition("squad");
  EXPECT_EQ(q.family(), TaskFamily::kSpan);
  EXPECT_EQ(q.max_seq_length, 384);  // run_squad.py
  EXPECT_EQ(q.squad.doc_stride, 128);
  EXPECT_EQ(q.squad.max_query_length, 64);
  EXPECT_EQ(q.squad_answers.n_best, 20);
  EXPECT_EQ(q.squad_answers.max_answer_length, 30);
  expect_error([] { make_task_definition("mnli"); }, "unknown task 'mnli'");
  EXPECT_EQ(make_task_definition("cola").heads().task, "cola");
}

TEST(TaskDefinitionTest, JsonRoundTrip) {
  test::TempDir dir;
  write(dir.file("g.tsv"), "id\ttext\tother\tlabel\n1\ta\tb\t0.5\n");
  GenericTsvOptions o;
  o.text_column = "text";
  o.text_pair_column = "other";
  o.label_column = "3";
  o.regression = true;
  const TaskDefinition g = make_task_definition("tsv", o, dir.file("g.tsv"));
  EXPECT_EQ(g.kind, HeadKind::kRegression);
  EXPECT_TRUE(g.pair);
  const TaskDefinition g2 = parse_task_definition(task_definition_json(g), "m.brt");
  EXPECT_EQ(g2.name, "tsv");
  EXPECT_EQ(g2.kind, HeadKind::kRegression);
  EXPECT_TRUE(g2.pair);
  EXPECT_EQ(g2.tsv.text_column, "text");
  EXPECT_EQ(g2.tsv.text_pair_column, "other");
  EXPECT_EQ(g2.tsv.label_column, "3");
  EXPECT_TRUE(g2.tsv.regression);
  EXPECT_TRUE(g2.tsv.has_header);
  EXPECT_EQ(tsv_spec(g2, dir.file("g.tsv")).label_column, 3);
  // Read back from the model, the columns are not the flags of the command that reads data with
  // them (eval, predict, quantize): a file without them names the model's flag.
  const std::string other = dir.write("other.tsv", "sentence\tscore\nx\t1\n");
  expect_error([&] { tsv_spec(g2, other); },
               other + ": the model's --text-column 'text' is not a column of the header");
  expect_error([&] { tsv_spec(g, other); }, other + ": --text-column 'text' is not a column");

  TaskDefinition q = make_task_definition("squad");
  q.max_seq_length = 128;
  q.squad.doc_stride = 64;
  q.squad.max_query_length = 32;
  q.squad_answers.n_best = 10;
  q.squad_answers.max_answer_length = 17;
  const TaskDefinition q2 = parse_task_definition(task_definition_json(q), "m.brt");
  EXPECT_EQ(q2.max_seq_length, 128);
  EXPECT_EQ(q2.squad.max_seq_length, 128);
  EXPECT_EQ(q2.squad.doc_stride, 64);
  EXPECT_EQ(q2.squad.max_query_length, 32);
  EXPECT_EQ(q2.squad_answers.n_best, 10);
  EXPECT_EQ(q2.squad_answers.max_answer_length, 17);
  EXPECT_EQ(q2.kind, HeadKind::kQuestionAnswering);
  expect_error([] { parse_task_definition("{\"name\": 3}", "m.brt"); }, "m.brt: metadata 'task'");
}

TEST(TaskDefinitionTest, ArticleRanges) {
  ArticleRange r = parse_article_range("0-29", "--train-articles");
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 30u);  // inclusive on the command line, [first, last) inside
  r = parse_article_range("7", "--dev-articles");
  EXPECT_EQ(r.first, 7u);
  EXPECT_EQ(r.last, 8u);
  EXPECT_TRUE(ArticleRange{}.all());
  expect_error([] { parse_article_range("5-2", "--dev-articles"); }, "--dev-articles: range '5-2'");
  expect_error([] { parse_article_range("a-b", "--x"); }, "--x: expected an article range");
  expect_error([] { parse_article_range("-3", "--x"); }, "--x: expected an article range");
  expect_error([] { parse_article_range("1-", "--x"); }, "--x: expected an article range");
}

// --- metrics from outputs ------------------------------------------------------------------------------

TEST(SequenceMetricsTest, FromLogitsAndScores) {
  // Predictions (argmax) 1 1 0 0 1 against gold 1 0 0 1 1: TP 2, FP 1, FN 1, TN 1.
  const std::vector<std::vector<float>> rows = {{0, 1}, {-1, 2}, {3, 1}, {0.5f, 0.2f}, {0, 0.1f}};
  std::vector<EncodedExample> gold(5);
  const int labels[] = {1, 0, 0, 1, 1};
  for (int i = 0; i < 5; ++i) gold[i].label = labels[i];
  const auto m = sequence_metrics({"f1", "accuracy", "matthews_correlation"}, rows, gold, false);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].first, "f1");
  EXPECT_DOUBLE_EQ(m[0].second, 4.0 / 6.0);  // 2TP / (2TP + FP + FN)
  EXPECT_DOUBLE_EQ(m[1].second, 3.0 / 5.0);
  // (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)) = (2 − 1) / sqrt(3·3·2·2) = 1/6.
  EXPECT_NEAR(m[2].second, 1.0 / 6.0, 1e-15);

  // Scores 1 2 3 4 against targets 2 4 6 9: Spearman 1 (same order); Pearson by hand:
  // x̄ 2.5, ȳ 5.25, Σdxdy = 11.5, Σdx² = 5, Σdy² = 26.75 → 11.5 / sqrt(133.75).
  const std::vector<std::vector<float>> scores = {{1}, {2}, {3}, {4}};
  std::vector<EncodedExample> targets(4);
  const float t[] = {2, 4, 6, 9};
  for (int i = 0; i < 4; ++i) targets[i].target = t[i];
  const auto r = sequence_metrics({"pearson", "spearmanr"}, scores, targets, true);
  EXPECT_NEAR(r[0].second, 11.5 / std::sqrt(133.75), 1e-12);
  EXPECT_NEAR(r[1].second, 1.0, 1e-12);
}

// --- a tiny model on each family -------------------------------------------------------------------------

class TinyModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string vocab = test::data_dir() + "/vocab/bert-base-uncased-vocab.txt";
    BERTRT_REQUIRE_PATH(vocab);
    tok_ = std::make_unique<Tokenizer>(Vocab::load(vocab), TokenizerOptions{});
    config_.vocab_size = tok_->vocab().size();
    config_.hidden_size = 32;
    config_.num_hidden_layers = 2;
    config_.num_attention_heads = 2;
    config_.intermediate_size = 64;
    config_.max_position_embeddings = 128;
    be_ = make_backend("cpu");
  }
  std::unique_ptr<BertModel> model_for(const TaskDefinition& def) {
    auto m = std::make_unique<BertModel>(config_, HeadsConfig{});
    m->init_weights(1);
    m->set_heads(def.heads(), 2);
    return m;
  }
  // Trains `steps` AdamW steps at a constant-ish rate on `data` (the whole set each step).
  void train(BertModel& m, const TaskData& data, int steps, float lr = 3e-3f) {
    OptimOptions oo;
    oo.learning_rate = lr;
    oo.total_steps = steps;
    oo.warmup_steps = 0;
    oo.weight_decay = 0;
    Trainer trainer(m, *be_, oo);
    finetune(trainer, data, int(data.size()), steps, 5, nullptr);
  }
  static double metric(const TaskMetrics& m, const std::string& name) {
    for (const auto& [n, v] : m.values)
      if (n == name) return v;
    ADD_FAILURE() << "no metric " << name;
    return NAN;
  }

  test::TempDir dir_;
  std::unique_ptr<Tokenizer> tok_;
  BertConfig config_;
  std::unique_ptr<Backend> be_;
};

// Outputs of an example must not depend on the batch (and so the padding) it ran in: batch size
// 1 (no padding) against 3 (padded to the longest). Tolerance: fp32 GEMMs of different shapes may
// sum in another order (relative ~1e-6 on O(1) values); 1e-4 leaves a wide margin while a wrong
// row offset or an unmasked pad would differ at O(0.1).
TEST_F(TinyModelTest, OutputsDoNotDependOnPadding) {
  write(dir_.file("p.tsv"),
        "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t1\t2\tA short one.\tShort.\n"
        "0\t3\t4\tA much longer sentence with quite a few more words in it.\tAnd a second one too.\n"
        "1\t5\t6\tMedium length here.\tYes.\n");
  TaskDefinition def = make_task_definition("mrpc");
  auto m = model_for(def);
  const auto items = encode_examples(*tok_, read_glue_tsv(dir_.file("p.tsv"), glue_task("mrpc")), 64);
  const SequenceOutputs one = run_sequences(*m, *be_, items, 1, tok_->pad_id(), true);
  const SequenceOutputs three = run_sequences(*m, *be_, items, 3, tok_->pad_id(), true);
  ASSERT_EQ(one.rows.size(), 3u);
  ASSERT_EQ(three.rows.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    for (size_t k = 0; k < 2; ++k) EXPECT_NEAR(one.rows[i][k], three.rows[i][k], 1e-4) << i;
  EXPECT_NEAR(one.loss.mean(), three.loss.mean(), 1e-4);
  EXPECT_EQ(three.loss.count, 3);

  write(dir_.file("n.conll"),
        "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n\n"
        "Germany NNP B-NP B-LOC\n's POS B-NP O\nrepresentative NN I-NP O\nto TO B-PP O\n");
  TaskDefinition ner = make_task_definition("conll2003");
  auto mn = model_for(ner);
  const NerEncoding enc = encode_ner(*tok_, read_conll(dir_.file("n.conll")), 64);
  const TokenOutputs t1 = run_tokens(*mn, *be_, enc.features, 1, tok_->pad_id());
  const TokenOutputs t3 = run_tokens(*mn, *be_, enc.features, 3, tok_->pad_id());
  ASSERT_EQ(t1.logits.size(), 3u);
  for (size_t f = 0; f < 3; ++f) {
    ASSERT_EQ(t1.logits[f].size(), enc.features[f].input_ids.size() * 9);
    ASSERT_EQ(t3.logits[f].size(), t1.logits[f].size());
    for (size_t j = 0; j < t1.logits[f].size(); ++j) EXPECT_NEAR(t1.logits[f][j], t3.logits[f][j], 1e-4);
  }
  EXPECT_EQ(t1.loss.count, 7);  // one labelled piece per word
  EXPECT_NEAR(t1.loss.mean(), t3.loss.mean(), 1e-4);

  SquadExample a{"a", "Who?", "Peter Blackburn wrote it in Brussels.", {}, 0};
  SquadExample b{"b", "Where is the longest river in the whole world?", "The Nile.", {}, 0};
  TaskDefinition qa = make_task_definition("squad");
  auto mq = model_for(qa);
  SquadFeatureOptions so;
  so.max_seq_length = 64;
  const auto feats = make_squad_features(*tok_, {a, b}, so);
  const SpanOutputs s1 = run_spans(*mq, *be_, feats, 1, tok_->pad_id(), false);
  const SpanOutputs s2 = run_spans(*mq, *be_, feats, 2, tok_->pad_id(), false);
  for (size_t f = 0; f < feats.size(); ++f) {
    ASSERT_EQ(s1.start[f].size(), feats[f].input_ids.size());
    for (size_t j = 0; j < s1.start[f].size(); ++j) {
      EXPECT_NEAR(s1.start[f][j], s2.start[f][j], 1e-4);
      EXPECT_NEAR(s1.end[f][j], s2.end[f][j], 1e-4);
    }
  }
}

// Each family learns a handful of examples to perfect scores on the same data: the targets reach
// the head they belong to, and evaluation reads the predictions back in the right order.
TEST_F(TinyModelTest, EachFamilyLearnsItsToyData) {
  BERTRT_SKIP_UNDER_EMULATOR();
  write(dir_.file("s.tsv"),
        "sentence\tlabel\nwonderful lovely film\t1\nterrible boring film\t0\ngreat fun\t1\n"
        "awful mess\t0\nbrilliant acting\t1\ndull plot\t0\n");
  const TaskDefinition sst = make_task_definition("sst2");
  auto m = model_for(sst);
  const auto data = load_task_data(sst, *tok_, dir_.file("s.tsv"));
  EXPECT_EQ(data->summary(), "6 examples");
  train(*m, *data, 40);
  EXPECT_EQ(metric(data->evaluate(*m, *be_, 4), "accuracy"), 1.0);

  // STS-B layout, scores 0..5: regression learns the order.
  std::string stsb = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n";
  const char* pairs[][3] = {{"a cat sits", "a cat sits", "5.0"}, {"a dog runs", "the sky is blue", "0.0"},
                            {"men play ball", "men play a game", "3.8"}, {"rain falls", "it is sunny", "1.0"},
                            {"kids laugh", "children laugh", "4.4"}};
  for (int i = 0; i < 5; ++i)
    stsb += fmt::format("{}\tg\tf\ty\t0\ts\ts\t{}\t{}\t{}\n", i, pairs[i][0], pairs[i][1], pairs[i][2]);
  write(dir_.file("r.tsv"), stsb);
  const TaskDefinition reg = make_task_definition("stsb");
  auto mr = model_for(reg);
  const auto rdata = load_task_data(reg, *tok_, dir_.file("r.tsv"));
  train(*mr, *rdata, 100, 1e-2f);  // targets up to 5: a larger rate reaches them sooner
  const TaskMetrics rm = rdata->evaluate(*mr, *be_, 8);
  EXPECT_GT(metric(rm, "pearson"), 0.95);
  EXPECT_EQ(metric(rm, "spearmanr"), 1.0);
  // run_glue.py's combined_score: the mean of the task's metrics.
  EXPECT_DOUBLE_EQ(metric(rm, "combined_score"), (metric(rm, "pearson") + 1.0) / 2);
  EXPECT_LT(rm.loss, 0.2);

  write(dir_.file("n.conll"),
        "EU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\ncall NN I-NP O\n\n"
        "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n"
        "BRUSSELS NNP B-NP B-LOC\n1996-08-22 CD I-NP O\n");
  const TaskDefinition ner = make_task_definition("conll2003");
  auto mn = model_for(ner);
  const auto ndata = load_task_data(ner, *tok_, dir_.file("n.conll"));
  EXPECT_EQ(ndata->summary(), "3 sentences in 3 windows (0 split)");
  train(*mn, *ndata, 60);
  const TaskMetrics nm = ndata->evaluate(*mn, *be_, 2);
  EXPECT_EQ(metric(nm, "overall_f1"), 1.0);
  EXPECT_EQ(metric(nm, "overall_accuracy"), 1.0);
  EXPECT_EQ(nm.examples, 3);
  // seqeval's per-type report, sorted by type; number = gold entities of the type.
  ASSERT_EQ(nm.groups.size(), 4u);
  const char* types[] = {"LOC", "MISC", "ORG", "PER"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(nm.groups[i].name, types[i]);
    EXPECT_EQ(nm.groups[i].number, 1);
  }

  write(dir_.file("q.json"), R"({"data": [{"title": "t", "paragraphs": [
    {"context": "Peter Blackburn wrote the report in Brussels in 1996.",
     "qas": [{"id": "q1", "question": "Who wrote the report?", "answers": [{"answer_start": 0, "text": "Peter Blackburn"}]},
             {"id": "q2", "question": "Where was it written?", "answers": [{"answer_start": 36, "text": "Brussels"}]},
             {"id": "q3", "question": "When?", "answers": [{"answer_start": 48, "text": "1996"}]}]}]}]})");
  TaskDefinition qa = make_task_definition("squad");
  qa.max_seq_length = 64;
  auto mq = model_for(qa);
  const auto qdata = load_task_data(qa, *tok_, dir_.file("q.json"));
  train(*mq, *qdata, 80);
  const TaskMetrics qm = qdata->evaluate(*mq, *be_, 2);
  EXPECT_EQ(metric(qm, "exact_match"), 1.0);
  EXPECT_EQ(metric(qm, "f1"), 1.0);
  EXPECT_EQ(qm.examples, 3);
}

}  // namespace
}  // namespace bertrt
