// Metrics: hand-checkable cases (the arithmetic is in the comments), then a cross-check against
// Python at test time: the reference definitions written out in plain Python (scikit-learn,
// scipy and seqeval are not installed here): sklearn's matthews_corrcoef formula over the
// confusion matrix, scipy's rankdata(method="average") + Pearson, seqeval 1.x get_entities /
// f1_score verbatim (and classification_report's per-type rows, accuracy_score), and
// evaluate-v1.1.py's normalize_answer / f1_score / exact_match verbatim.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "metrics/classification.h"
#include "metrics/correlation.h"
#include "metrics/seqeval.h"
#include "metrics/squad_eval.h"

namespace bertrt {
namespace {

// ------------------------------------------------------------------ classification ----------

TEST(Accuracy, CountsMatches) {
  EXPECT_DOUBLE_EQ(accuracy({1, 0, 1, 1}, {1, 1, 1, 0}), 0.5);  // 2 of 4
  EXPECT_DOUBLE_EQ(accuracy({2, 2, 2}, {2, 2, 2}), 1.0);
  EXPECT_THROW(accuracy({1}, {1, 0}), Error);
  EXPECT_THROW(accuracy({}, {}), Error);
}

TEST(F1Positive, HandChecked) {
  // pred 1 1 0 0 1 / gold 1 0 1 0 1: TP 2, FP 1, FN 1 → 2·2 / (4 + 1 + 1) = 2/3
  EXPECT_DOUBLE_EQ(f1_positive({1, 1, 0, 0, 1}, {1, 0, 1, 0, 1}), 2.0 / 3.0);
  // positive = 0: TP 1 (index 3), FP 1 (index 2), FN 1 (index 1) → 2/4
  EXPECT_DOUBLE_EQ(f1_positive({1, 1, 0, 0, 1}, {1, 0, 1, 0, 1}, 0), 0.5);
  // no positives anywhere: sklearn's zero_division result 0
  EXPECT_DOUBLE_EQ(f1_positive({0, 0}, {0, 0}), 0.0);
}

TEST(Matthews, HandChecked) {
  // TP 2, TN 1, FP 1, FN 1: (2·1 − 1·1) / sqrt(3·3·2·2) = 1/6
  EXPECT_NEAR(matthews_corrcoef({1, 1, 0, 0, 1}, {1, 0, 1, 0, 1}), 1.0 / 6.0, 1e-15);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({0, 1, 1, 0}, {0, 1, 1, 0}), 1.0);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({1, 0, 0, 1}, {0, 1, 1, 0}), -1.0);
  // A constant prediction makes the denominator 0: sklearn returns 0.
  EXPECT_DOUBLE_EQ(matthews_corrcoef({1, 1, 1, 1}, {0, 1, 1, 0}), 0.0);
  EXPECT_DOUBLE_EQ(matthews_corrcoef({0, 1, 1, 0}, {1, 1, 1, 1}), 0.0);
}

// --------------------------------------------------------------------- correlation ----------

TEST(Pearson, HandChecked) {
  EXPECT_NEAR(pearson({1, 2, 3}, {2, 4, 6}), 1.0, 1e-15);
  EXPECT_NEAR(pearson({1, 2, 3}, {3, 2, 1}), -1.0, 1e-15);
  // deviations (−1.5 −.5 .5 1.5) and (−1.5 .5 −.5 1.5): Σdxdy 4, Σdx² = Σdy² = 5 → 0.8
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-15);
  EXPECT_TRUE(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));  // scipy: nan for a constant input
  EXPECT_THROW(pearson({1}, {1}), Error);
  EXPECT_THROW(pearson({1, NAN}, {1, 2}), Error);
}

TEST(Spearman, AverageRanksForTies) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({3, 1, 3, 3}), (std::vector<double>{3, 1, 3, 3}));  // ranks 2,3,4 → 3
  // ranks (1 2.5 2.5 4) vs (1 2 3 4): Σdxdy 4.5, Σdx² 4.5, Σdy² 5 → 4.5/sqrt(22.5) = 3/sqrt(10)
  EXPECT_NEAR(spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 3.0 / std::sqrt(10.0), 1e-15);
  EXPECT_NEAR(spearman({1, 2, 3, 4}, {1, 4, 9, 16}), 1.0, 1e-15);  // monotone, not linear
}

// ------------------------------------------------------------------------- seqeval -----------

using Tags = std::vector<std::string>;

TEST(Seqeval, EntitiesOfIob2) {
  const auto e = iob_entities({"B-PER", "I-PER", "O", "B-LOC"});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], (Entity{"PER", 0, 1}));
  EXPECT_EQ(e[1], (Entity{"LOC", 3, 3}));
  // B after B of the same type: two entities.
  EXPECT_EQ(iob_entities({"B-ORG", "B-ORG"}).size(), 2u);
}

TEST(Seqeval, LenientIAfterOStartsAnEntity) {
  // seqeval default mode: I-X after O starts an X entity; a type change ends one and starts another.
  EXPECT_EQ(iob_entities({"O", "I-PER", "I-PER"}), (std::vector<Entity>{{"PER", 1, 2}}));
  EXPECT_EQ(iob_entities({"B-PER", "I-LOC"}), (std::vector<Entity>{{"PER", 0, 0}, {"LOC", 1, 1}}));
  EXPECT_EQ(iob_entities({"I-MISC"}), (std::vector<Entity>{{"MISC", 0, 0}}));
  EXPECT_THROW(iob_entities({"O", "PER"}), Error);
}

TEST(Seqeval, MicroF1OfTheSeqevalDocstring) {
  // seqeval f1_score docstring: 0.50 (MISC span wrong, PER right: P = R = 1/2).
  const std::vector<Tags> gold = {{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"},
                                  {"B-PER", "I-PER", "O"}};
  const std::vector<Tags> pred = {{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"},
                                  {"B-PER", "I-PER", "O"}};
  const EntityScores s = entity_scores(gold, pred);
  EXPECT_EQ(s.correct, 1);
  EXPECT_EQ(s.predicted, 2);
  EXPECT_EQ(s.gold, 2);
  EXPECT_DOUBLE_EQ(s.f1, 0.5);
  // precision 1/1, recall 1/2 → F1 2/3
  const EntityScores t = entity_scores({{"B-PER", "O", "B-LOC"}}, {{"B-PER", "O", "O"}});
  EXPECT_DOUBLE_EQ(t.precision, 1.0);
  EXPECT_DOUBLE_EQ(t.recall, 0.5);
  EXPECT_DOUBLE_EQ(t.f1, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(entity_scores({{"O"}}, {{"O"}}).f1, 0.0);  // nothing to find: 0 as seqeval
  EXPECT_THROW(entity_scores({{"O"}}, {{"O", "O"}}), Error);
}

TEST(Seqeval, ReportOfTheEvaluateDocstring) {
  // evaluate's seqeval docstring on these inputs: keys MISC, PER, overall_*; overall_f1 0.5,
  // PER f1 1.0; seqeval's classification_report docstring: MISC 0.00 0.00 0.00 support 1, PER
  // 1.00 1.00 1.00 support 1; accuracy_score docstring 0.80 (8 of 10 tags).
  const std::vector<Tags> gold = {{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"},
                                  {"B-PER", "I-PER", "O"}};
  const std::vector<Tags> pred = {{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"},
                                  {"B-PER", "I-PER", "O"}};
  const SeqevalReport r = seqeval_report(gold, pred);
  EXPECT_DOUBLE_EQ(r.overall.f1, 0.5);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.8);
  ASSERT_EQ(r.per_type.size(), 2u);
  EXPECT_EQ(r.per_type[0].first, "MISC");
  EXPECT_EQ(r.per_type[0].second.f1, 0.0);
  EXPECT_EQ(r.per_type[0].second.gold, 1);
  EXPECT_EQ(r.per_type[1].first, "PER");
  EXPECT_EQ(r.per_type[1].second.precision, 1.0);
  EXPECT_EQ(r.per_type[1].second.recall, 1.0);
  EXPECT_EQ(r.per_type[1].second.f1, 1.0);
  EXPECT_EQ(r.per_type[1].second.gold, 1);
  // A type only predicted is listed with number 0 (the union of gold and predicted types).
  const SeqevalReport u = seqeval_report({{"O", "B-PER"}}, {{"B-LOC", "B-PER"}});
  ASSERT_EQ(u.per_type.size(), 2u);
  EXPECT_EQ(u.per_type[0].first, "LOC");
  EXPECT_EQ(u.per_type[0].second.gold, 0);
  EXPECT_EQ(u.per_type[0].second.precision, 0.0);
}

// --------------------------------------------------------------------------- SQuAD -----------

TEST(SquadEval, Normalisation) {
  EXPECT_EQ(normalize_squad_answer("The  Denver Broncos!"), "denver broncos");
  EXPECT_EQ(normalize_squad_answer("an apple, a day"), "apple day");
  EXPECT_EQ(normalize_squad_answer("theatre"), "theatre");     // articles only as whole words
  EXPECT_EQ(normalize_squad_answer("the-end"), "theend");  // punctuation goes before articles
  EXPECT_EQ(normalize_squad_answer("\tA\u00a0B "), "b");       // U+00A0 is str.split() space
  EXPECT_EQ(normalize_squad_answer("ÉCOLE ﬁne"), "école ﬁne");  // Unicode lower, no NFKC
}

TEST(SquadEval, ExactMatchAndF1) {
  EXPECT_DOUBLE_EQ(squad_exact_match("the Denver Broncos", {"Broncos", "Denver Broncos"}), 1.0);
  EXPECT_DOUBLE_EQ(squad_exact_match("Denver", {"Denver Broncos"}), 0.0);
  // pred {denver broncos}, gold {broncos}: P 1/2, R 1 → 2/3
  EXPECT_DOUBLE_EQ(squad_f1("Denver Broncos", {"Broncos"}), 2.0 / 3.0);
  // max over gold: "broncos" alone scores 2/3, "denver broncos" scores 1
  EXPECT_DOUBLE_EQ(squad_f1("Denver Broncos", {"Broncos", "the Denver Broncos."}), 1.0);
  // Counter intersection: "x x y" vs "x y y" share {x: 1, y: 1} = 2 → P 2/3, R 2/3 → 2/3
  EXPECT_DOUBLE_EQ(squad_f1("x x y", {"x y y"}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(squad_f1("", {"x"}), 0.0);
  const SquadScores s = squad_scores({"Denver Broncos", "1998"}, {{"Broncos"}, {"1998", "in 1998"}});
  EXPECT_DOUBLE_EQ(s.exact_match, 0.5);
  EXPECT_DOUBLE_EQ(s.f1, (2.0 / 3.0 + 1.0) / 2);
  EXPECT_THROW(squad_f1("x", {}), Error);
}

// ------------------------------------------------------------ Python cross-check ------------

const char* kPython = "/usr/bin/python3";

std::string run_python(const std::string& script) {
  char path[] = "/tmp/bertrt_metrics_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  close(fd);
  std::ofstream(path) << script;
  const std::string cmd = std::string(kPython) + " " + path;
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, got);
    if (pclose(pipe) != 0) out.clear();
  }
  std::remove(path);
  return out;
}

// Deterministic inputs (a 64-bit LCG): ties are frequent on purpose (few distinct values).
struct Lcg {
  uint64_t s;
  uint32_t next() { return uint32_t((s = s * 6364136223846793005ULL + 1442695040888963407ULL) >> 33); }
};

std::string py_list(const std::vector<double>& v) {
  std::string s = "[";
  for (double x : v) s += fmt::format("{},", x);
  return s + "]";
}
std::string py_list(const std::vector<int>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }
std::string py_tags(const std::vector<Tags>& v) {
  std::string s = "[";
  for (const Tags& t : v) {
    s += "[";
    for (const auto& x : t) s += "'" + x + "',";
    s += "],";
  }
  return s + "]";
}

const char* kReference = R"PY(
import re, string, collections, math
def mcc(y_true, y_pred):  # sklearn.metrics.matthews_corrcoef
    classes = sorted(set(y_true) | set(y_pred))
    C = [[sum(1 for t, p in zip(y_true, y_pred) if t == a and p == b) for b in classes] for a in classes]
    t_sum = [sum(r) for r in C]; p_sum = [sum(C[i][j] for i in range(len(C))) for j in range(len(C))]
    n_correct = sum(C[i][i] for i in range(len(C))); n = sum(t_sum)
    cov_ytyp = n_correct * n - sum(p * t for p, t in zip(p_sum, t_sum))
    cov_ypyp = n * n - sum(p * p for p in p_sum); cov_ytyt = n * n - sum(t * t for t in t_sum)
    return 0.0 if cov_ypyp * cov_ytyt == 0 else cov_ytyp / math.sqrt(cov_ytyt * cov_ypyp)
def rankdata(a):  # scipy.stats.rankdata(method='average')
    order = sorted(range(len(a)), key=lambda i: a[i]); r = [0.0] * len(a); i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and a[order[j + 1]] == a[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r
def pearson(x, y):
    mx = sum(x) / len(x); my = sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return sxy / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
# seqeval 1.x sequence_labeling.py
def end_of_chunk(prev_tag, tag, prev_type, type_):
    chunk_end = False
    if prev_tag == 'E': chunk_end = True
    if prev_tag == 'S': chunk_end = True
    if prev_tag == 'B' and tag == 'B': chunk_end = True
    if prev_tag == 'B' and tag == 'S': chunk_end = True
    if prev_tag == 'B' and tag == 'O': chunk_end = True
    if prev_tag == 'I' and tag == 'B': chunk_end = True
    if prev_tag == 'I' and tag == 'S': chunk_end = True
    if prev_tag == 'I' and tag == 'O': chunk_end = True
    if prev_tag != 'O' and prev_tag != '.' and prev_type != type_: chunk_end = True
    return chunk_end
def start_of_chunk(prev_tag, tag, prev_type, type_):
    chunk_start = False
    if tag == 'B': chunk_start = True
    if tag == 'S': chunk_start = True
    if prev_tag == 'E' and tag == 'E': chunk_start = True
    if prev_tag == 'E' and tag == 'I': chunk_start = True
    if prev_tag == 'S' and tag == 'E': chunk_start = True
    if prev_tag == 'S' and tag == 'I': chunk_start = True
    if prev_tag == 'O' and tag == 'E': chunk_start = True
    if prev_tag == 'O' and tag == 'I': chunk_start = True
    if tag != 'O' and tag != '.' and prev_type != type_: chunk_start = True
    return chunk_start
def get_entities(seq):
    if any(isinstance(s, list) for s in seq): seq = [item for sublist in seq for item in sublist + ['O']]
    prev_tag = 'O'; prev_type = ''; begin_offset = 0; chunks = []
    for i, chunk in enumerate(seq + ['O']):
        tag = chunk[0]; type_ = chunk[1:].split('-', maxsplit=1)[-1] or '_'
        if end_of_chunk(prev_tag, tag, prev_type, type_): chunks.append((prev_type, begin_offset, i - 1))
        if start_of_chunk(prev_tag, tag, prev_type, type_): begin_offset = i
        prev_tag = tag; prev_type = type_
    return chunks
def seq_report(y_true, y_pred):  # seqeval classification_report(output_dict) + accuracy_score
    t = collections.defaultdict(set); p = collections.defaultdict(set)
    for ty, b, e in get_entities(y_true): t[ty].add((b, e))
    for ty, b, e in get_entities(y_pred): p[ty].add((b, e))
    rows = []
    for ty in sorted(set(t) | set(p)):
        c = len(t[ty] & p[ty]); pr = c / len(p[ty]) if p[ty] else 0.0; rc = c / len(t[ty]) if t[ty] else 0.0
        rows.append((ty, pr, rc, 2 * pr * rc / (pr + rc) if pr + rc > 0 else 0.0, len(t[ty])))
    flat_t = [x for s in y_true for x in s]; flat_p = [x for s in y_pred for x in s]
    return rows, sum(a == b for a, b in zip(flat_t, flat_p)) / len(flat_t)
def seq_f1(y_true, y_pred):
    t = set(get_entities(y_true)); p = set(get_entities(y_pred)); c = len(t & p)
    pr = c / len(p) if p else 0; rc = c / len(t) if t else 0
    return 2 * pr * rc / (pr + rc) if pr + rc > 0 else 0
# evaluate-v1.1.py
def normalize_answer(s):
    def remove_articles(text): return re.sub(r'\b(a|an|the)\b', ' ', text)
    def white_space_fix(text): return ' '.join(text.split())
    def remove_punc(text):
        exclude = set(string.punctuation); return ''.join(ch for ch in text if ch not in exclude)
    def lower(text): return text.lower()
    return white_space_fix(remove_articles(remove_punc(lower(s))))
def f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0: return 0
    precision = 1.0 * num_same / len(prediction_tokens); recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)
def em(prediction, ground_truth): return float(normalize_answer(prediction) == normalize_answer(ground_truth))
)PY";

TEST(MetricsVsPython, RandomCasesAgree) {
  if (std::system((std::string(kPython) + " -c 'pass' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "python3 missing";
  Lcg rng{42};
  std::string script = kReference;
  std::vector<double> expected_cpp;  // the C++ values, in the order Python prints its own
  for (int round = 0; round < 5; ++round) {
    const int n = 7 + 13 * round, k = 2 + round % 3;  // binary and multi-class
    std::vector<int> p(n), g(n);
    std::vector<double> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      p[i] = int(rng.next() % k), g[i] = int(rng.next() % k);
      x[i] = double(rng.next() % 6) * 0.5;  // many ties
      y[i] = double(rng.next() % 1000) / 7.0;
    }
    script += fmt::format("print(repr(mcc({1}, {0})))\n", py_list(p), py_list(g));
    expected_cpp.push_back(matthews_corrcoef(p, g));
    script += fmt::format("print(repr(pearson({}, {})))\n", py_list(x), py_list(y));
    expected_cpp.push_back(pearson(x, y));
    script += fmt::format("print(repr(pearson(rankdata({}), rankdata({}))))\n", py_list(x), py_list(y));
    expected_cpp.push_back(spearman(x, y));
    const char* tags[] = {"O", "O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-MISC", "B-MISC"};
    std::vector<Tags> gt, pt;
    for (int s = 0; s < 4; ++s) {
      Tags a, b;
      for (int i = 0; i < 3 + round + s; ++i) a.push_back(tags[rng.next() % 9]), b.push_back(tags[rng.next() % 9]);
      gt.push_back(a), pt.push_back(b);
    }
    script += fmt::format("print(repr(seq_f1({}, {})))\n", py_tags(gt), py_tags(pt));
    expected_cpp.push_back(entity_scores(gt, pt).f1);
    // evaluate's seqeval: overall_accuracy, then per type (sorted) precision, recall, f1, number;
    // Python prints the type count first so a missing or extra type shows.
    const SeqevalReport rep = seqeval_report(gt, pt);
    script += fmt::format(
        "rows, acc = seq_report({}, {})\nprint(repr(acc)); print(len(rows))\n"
        "for r in rows: print(repr(r[1])); print(repr(r[2])); print(repr(r[3])); print(r[4])\n",
        py_tags(gt), py_tags(pt));
    expected_cpp.push_back(rep.accuracy);
    expected_cpp.push_back(double(rep.per_type.size()));
    for (const auto& [type, e] : rep.per_type)
      expected_cpp.insert(expected_cpp.end(), {e.precision, e.recall, e.f1, double(e.gold)});
    EXPECT_EQ(rep.overall.f1, entity_scores(gt, pt).f1);
  }
  // SQuAD: awkward strings (articles inside words, punctuation between words, Unicode case).
  const std::vector<std::pair<std::string, std::string>> qa = {
      {"The Broncos' defense", "broncos defense"}, {"an ant ate a tea", "the ant, a tea!"},
      {"Ångström (unit)", "ångström unit"},         {"A.B.C.", "abc"},
      {"the the the", "the"},                      {"x—y", "x y"},
      {"Straße über", "STRASSE Über"},              {"1,000 km", "1000 km"}};
  for (const auto& [a, b] : qa) {
    script += fmt::format("print(repr(em(\"\"\"{}\"\"\", \"\"\"{}\"\"\")))\n"
                          "print(repr(float(f1_score(\"\"\"{}\"\"\", \"\"\"{}\"\"\"))))\n",
                          a, b, a, b);
    expected_cpp.push_back(squad_exact_match(a, {b}));
    expected_cpp.push_back(squad_f1(a, {b}));
  }
  const std::string out = run_python(script);
  ASSERT_FALSE(out.empty()) << "python reference failed";
  std::istringstream in(out);
  for (size_t i = 0; i < expected_cpp.size(); ++i) {
    double ref = 0;
    ASSERT_TRUE(in >> ref) << "python printed too few values";
    // Same formulas in double: only summation order differs (n ≤ 60 terms) → 1e-12.
    EXPECT_NEAR(expected_cpp[i], ref, 1e-12) << "value " << i;
  }
}

}  // namespace
}  // namespace bertrt
