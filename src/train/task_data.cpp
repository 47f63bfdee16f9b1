#include "train/task_data.h"

#include <fmt/format.h>

#include "core/error.h"
#include "metrics/classification.h"
#include "metrics/correlation.h"
#include "metrics/seqeval.h"
#include "metrics/squad_eval.h"
#include "tasks/conll.h"
#include "tasks/squad.h"
#include "train/task_inference.h"

namespace bertrt {

std::vector<std::pair<std::string, double>> sequence_metrics(
    const std::vector<std::string>& names, const std::vector<std::vector<float>>& rows,
    const std::vector<EncodedExample>& gold, bool regression) {
  std::vector<int> pred, label;
  std::vector<double> score, target;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (regression) {
      score.push_back(rows[i][0]);
      target.push_back(gold[i].target);
    } else {
      pred.push_back(argmax(rows[i]));
      label.push_back(gold[i].label);
    }
  }
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& n : names) {
    double v = 0;
    if (n == "accuracy") v = accuracy(pred, label);
    else if (n == "f1") v = f1_positive(pred, label, 1);
    else if (n == "matthews_correlation")
      v = matthews_corrcoef(pred, label);
    else if (n == "pearson") v = pearson(score, target);
    else if (n == "spearmanr")
      v = spearman(score, target);
    else fail("unknown metric '{}'", n);
    out.emplace_back(n, v);
  }
  return out;
}

void check_evaluable(const TaskData& data, const TaskDefinition& def, const std::string& what) {
  if (def.regression() && data.size() < 2)
    fail("{}: {} example{}, and {}'s pearson and spearmanr need at least 2", what, data.size(),
         data.size() == 1 ? "" : "s", def.name);
}

namespace {

class SequenceData : public TaskData {
 public:
  SequenceData(const TaskDefinition& def, const Tokenizer& tok, const std::string& path)
      : spec_(tsv_spec(def, path)),
        items_(encode_examples(tok, read_glue_tsv(path, spec_), def.max_seq_length)),
        pad_(tok.pad_id()) {}
  size_t size() const override { return items_.size(); }
  size_t length(size_t i) const override { return items_[i].input_ids.size(); }
  TaskBatch batch(const std::vector<size_t>& order, size_t begin, int bs) const override {
    return make_sequence_batch(items_, order, begin, bs, pad_, spec_.regression);
  }
  TaskMetrics evaluate(BertModel& model, Backend& be, int bs) const override {
    const SequenceOutputs out = run_sequences(model, be, items_, bs, pad_, /*with_targets=*/true);
    TaskMetrics m;
    m.values = sequence_metrics(spec_.metrics, out.rows, items_, spec_.regression);
    if (m.values.size() > 1) {  // run_glue.py: result["combined_score"] = np.mean(values)
      double sum = 0;
      for (const auto& [name, v] : m.values) sum += v;
      m.values.emplace_back("combined_score", sum / double(m.values.size()));
    }
    m.loss = out.loss.mean();
    m.examples = m.features = int64_t(items_.size());
    return m;
  }
  std::string summary() const override { return fmt::format("{} examples", items_.size()); }

 private:
  TaskSpec spec_;
  std::vector<EncodedExample> items_;
  int32_t pad_;
};

class NerData : public TaskData {
 public:
  NerData(const TaskDefinition& def, const Tokenizer& tok, const std::string& path)
      : labels_(def.labels), sentences_(read_conll(path, def.labels)),
        enc_(encode_ner(tok, sentences_, def.max_seq_length)), pad_(tok.pad_id()) {}
  size_t size() const override { return enc_.features.size(); }
  size_t length(size_t i) const override { return enc_.features[i].input_ids.size(); }
  TaskBatch batch(const std::vector<size_t>& order, size_t begin, int bs) const override {
    return make_ner_batch(enc_.features, order, begin, bs, pad_);
  }
  TaskMetrics evaluate(BertModel& model, Backend& be, int bs) const override {
    const TokenOutputs out = run_tokens(model, be, enc_.features, bs, pad_);
    std::vector<size_t> num_words;
    std::vector<std::vector<int>> gold;
    for (const NerSentence& s : sentences_) {
      num_words.push_back(s.words.size());
      gold.push_back(s.tags);
    }
    const auto pred = ner_word_predictions(enc_.features, out.logits, int(labels_.size()), num_words);
    const SeqevalReport r = seqeval_report(tag_strings(gold, labels_), tag_strings(pred, labels_));
    TaskMetrics m;
    m.values = {{"overall_precision", r.overall.precision},
                {"overall_recall", r.overall.recall},
                {"overall_f1", r.overall.f1},
                {"overall_accuracy", r.accuracy}};
    for (const auto& [type, e] : r.per_type)
      m.groups.push_back(
          {type, {{"precision", e.precision}, {"recall", e.recall}, {"f1", e.f1}}, e.gold});
    m.loss = out.loss.mean();
    m.examples = int64_t(sentences_.size());
    m.features = int64_t(enc_.features.size());
    return m;
  }
  std::string summary() const override {
    return fmt::format("{} sentences in {} windows ({} split)", sentences_.size(),
                       enc_.features.size(), enc_.split_sentences);
  }

 private:
  std::vector<std::string> labels_;
  std::vector<NerSentence> sentences_;
  NerEncoding enc_;
  int32_t pad_;
};

class SquadData : public TaskData {
 public:
  SquadData(const TaskDefinition& def, const Tokenizer& tok, const std::string& path,
            const ArticleRange& articles)
      : answers_(def.squad_answers), pad_(tok.pad_id()) {
    const SquadDataset data = read_squad(path);
    examples_ = articles.all() ? data.examples
                               : select_articles(data, articles.first, articles.last);
    SquadFeatureOptions o = def.squad;
    o.max_seq_length = def.max_seq_length;
    features_ = make_squad_features(tok, examples_, o, &stats_);
  }
  size_t size() const override { return features_.size(); }
  size_t length(size_t i) const override { return features_[i].input_ids.size(); }
  TaskBatch batch(const std::vector<size_t>& order, size_t begin, int bs) const override {
    return make_squad_batch(features_, order, begin, bs, pad_);
  }
  TaskMetrics evaluate(BertModel& model, Backend& be, int bs) const override {
    const SpanOutputs out = run_spans(model, be, features_, bs, pad_, /*with_targets=*/true);
    const auto pred = postprocess_squad(examples_, features_, out.start, out.end, answers_);
    std::vector<std::string> text;
    std::vector<std::vector<std::string>> gold;
    for (size_t i = 0; i < examples_.size(); ++i) {
      text.push_back(pred[i].text);
      gold.emplace_back();
      for (const SquadAnswer& a : examples_[i].answers) gold.back().push_back(a.text);
    }
    const SquadScores s = squad_scores(text, gold);
    TaskMetrics m;
    m.values = {{"exact_match", s.exact_match}, {"f1", s.f1}};
    m.loss = out.loss.mean();
    m.examples = int64_t(examples_.size());
    m.features = int64_t(features_.size());
    return m;
  }
  std::string summary() const override {
    return fmt::format("{} questions in {} windows ({} questions truncated, {} windows without "
                       "the answer)", examples_.size(), features_.size(),
                       stats_.truncated_questions, stats_.answers_outside);
  }

 private:
  SquadPostprocessOptions answers_;
  int32_t pad_;
  std::vector<SquadExample> examples_;
  std::vector<SquadFeature> features_;
  SquadFeatureStats stats_;
};

}  // namespace

std::unique_ptr<TaskData> load_task_data(const TaskDefinition& def, const Tokenizer& tokenizer,
                                         const std::string& path, const ArticleRange& articles) {
  switch (def.family()) {
    case TaskFamily::kToken: return std::make_unique<NerData>(def, tokenizer, path);
    case TaskFamily::kSpan: return std::make_unique<SquadData>(def, tokenizer, path, articles);
    case TaskFamily::kSequence: break;
  }
  return std::make_unique<SequenceData>(def, tokenizer, path);
}

}  // namespace bertrt
