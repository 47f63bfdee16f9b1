#include "embed/embedding_eval.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/utf8.h"
#include "metrics/correlation.h"
#include "tasks/tsv_fields.h"

namespace bertrt {

namespace {

// Row-wise dot products of unit vectors: the cosine.
double dot(const float* a, const float* b, int d) {
  double s = 0;
  for (int i = 0; i < d; ++i) s += double(a[i]) * b[i];
  return s;
}

}  // namespace

std::vector<StsPair> read_sts_tsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  const std::vector<std::string> header =
      read_tsv_header(in, path, "sentence1, sentence2 and score");
  auto column = [&](const char* name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    fail("{}: line 1: no column '{}' in the header (an STS TSV names sentence1, sentence2 and "
         "score, as GLUE STS-B does)", path, name);
  };
  const size_t c1 = column("sentence1"), c2 = column("sentence2"), cs = column("score");
  const size_t need = std::max({c1, c2, cs}) + 1;
  std::vector<StsPair> pairs;
  size_t n = 1;
  std::string line;
  while (next_tsv_line(in, path, line, n)) {
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() < need)
      fail("{}: line {}: {} tab-separated fields, the header's sentence1, sentence2 and score need {}",
           path, n, f.size(), need);
    StsPair p{f[c1], f[c2], 0};
    char* end = nullptr;
    p.score = std::strtod(f[cs].c_str(), &end);
    if (f[cs].empty() || *end != '\0' || !std::isfinite(p.score))
      fail("{}: line {}: score '{}' is not a number", path, n, f[cs]);
    pairs.push_back(std::move(p));
  }
  if (pairs.size() < 2) fail("{}: {} pair(s); a correlation needs at least 2", path, pairs.size());
  return pairs;
}

RetrievalSet squad_retrieval(const std::vector<SquadExample>& examples) {
  RetrievalSet s;
  std::map<std::string, size_t> index;  // paragraph text → document
  for (const SquadExample& e : examples) {
    auto [it, fresh] = index.emplace(e.context, s.corpus.size());
    if (fresh) s.corpus.push_back(e.context);
    s.queries.push_back(e.question);
    s.relevant.push_back(it->second);
  }
  return s;
}

EmbeddingMetrics evaluate_sts(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                              const std::vector<StsPair>& pairs, const EmbedOptions& options) {
  EmbedOptions o = options;
  o.normalize = true;  // the cosine is then the dot product
  std::vector<std::string> a, b;
  std::vector<double> gold, cosine;
  for (const StsPair& p : pairs) {
    a.push_back(p.sentence1);
    b.push_back(p.sentence2);
    gold.push_back(p.score);
  }
  const int d = embedding_dim(model, o);
  const std::vector<float> ea = embed_texts(model, tokenizer, be, a, o);
  const std::vector<float> eb = embed_texts(model, tokenizer, be, b, o);
  for (size_t i = 0; i < pairs.size(); ++i)
    cosine.push_back(dot(&ea[i * size_t(d)], &eb[i * size_t(d)], d));
  return {{"cosine_pearson", pearson(cosine, gold)}, {"cosine_spearman", spearman(cosine, gold)}};
}

EmbeddingMetrics retrieval_metrics(const std::vector<size_t>& ranks) {
  const size_t ks[] = {1, 3, 5, 10};
  EmbeddingMetrics m;
  const double n = double(ranks.size());
  auto mean = [&](auto f) {
    double s = 0;
    for (size_t r : ranks) s += f(r);
    return ranks.empty() ? 0.0 : s / n;
  };
  // One relevant document a query: accuracy@k = recall@k = hit@k, precision@k = hit@k / k.
  for (size_t k : ks)
    m.push_back({"cosine_accuracy@" + std::to_string(k), mean([&](size_t r) { return r <= k ? 1.0 : 0.0; })});
  for (size_t k : ks)
    m.push_back({"cosine_precision@" + std::to_string(k),
                 mean([&](size_t r) { return r <= k ? 1.0 / double(k) : 0.0; })});
  for (size_t k : ks)
    m.push_back({"cosine_recall@" + std::to_string(k), mean([&](size_t r) { return r <= k ? 1.0 : 0.0; })});
  m.push_back({"cosine_ndcg@10",
               mean([](size_t r) { return r <= 10 ? 1.0 / std::log2(double(r) + 1) : 0.0; })});
  m.push_back({"cosine_mrr@10", mean([](size_t r) { return r <= 10 ? 1.0 / double(r) : 0.0; })});
  m.push_back({"cosine_map@100", mean([](size_t r) { return r <= 100 ? 1.0 / double(r) : 0.0; })});
  return m;
}

EmbeddingMetrics evaluate_retrieval(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                    const RetrievalSet& set, const EmbedOptions& options,
                                    const EmbedOptions& query_options) {
  if (set.queries.empty() || set.corpus.empty()) fail("retrieval: no queries or no corpus");
  EmbedOptions co = options, qo = query_options;
  co.normalize = qo.normalize = true;
  const int d = embedding_dim(model, co);
  if (embedding_dim(model, qo) != d)
    fail("retrieval: the queries' and the corpus' embeddings differ in width");
  const std::vector<float> corpus = embed_texts(model, tokenizer, be, set.corpus, co);
  const std::vector<float> queries = embed_texts(model, tokenizer, be, set.queries, qo);
  std::vector<size_t> ranks(set.queries.size());
  for (size_t q = 0; q < set.queries.size(); ++q) {
    const float* e = &queries[q * size_t(d)];
    const double mine = dot(e, &corpus[set.relevant[q] * size_t(d)], d);
    size_t above = 0;
    for (size_t c = 0; c < set.corpus.size(); ++c)
      if (c != set.relevant[q] && dot(e, &corpus[c * size_t(d)], d) > mine) ++above;
    ranks[q] = above + 1;
  }
  return retrieval_metrics(ranks);
}

}  // namespace bertrt
