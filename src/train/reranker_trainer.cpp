#include "train/reranker_trainer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include "backends/dropout_rule.h"
#include "core/error.h"
#include "embed/embedder.h"
#include "tasks/squad.h"
#include "tasks/tsv_fields.h"

namespace bertrt {

namespace {

PairData read_rerank_tsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  const std::vector<std::string> header = read_tsv_header(in, path, "query, passage and label");
  auto find = [&](const char* name) -> int {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : int(it - header.begin());
  };
  const int q = find("query"), p = find("passage"), l = find("label");
  if (q < 0 || p < 0 || l < 0)
    fail("{}: line 1: the header's columns name {} of query, passage and label: {}", path,
         q < 0 ? "no query" : p < 0 ? "no passage" : "no label", fmt::join(header, ", "));
  const size_t need = size_t(std::max({q, p, l})) + 1;
  PairData d;
  d.scored = true;
  size_t n = 1;
  std::string line;
  while (next_tsv_line(in, path, line, n)) {
    const std::vector<std::string> f = split_tabs(line);
    if (f.size() < need)
      fail("{}: line {}: {} tab-separated fields, the header's columns need {}", path, n, f.size(),
           need);
    const std::string& text = f[size_t(l)];
    char* end = nullptr;
    const double y = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !std::isfinite(y))
      fail("{}: line {}: label '{}' is not a number", path, n, text);
    if (y < 0 || y > 1)
      fail("{}: line {}: label {} is outside [0, 1] (binary cross-entropy's targets)", path, n, y);
    d.rows.push_back(PairRow{{f[size_t(q)], f[size_t(p)]}, y});
  }
  return d;
}

PairData read_rerank_squad(const std::string& path, const ArticleRange& articles, uint64_t seed,
                           int negatives) {
  const SquadDataset s = read_squad(path);
  const std::vector<SquadExample> ex =
      articles.all() ? s.examples : select_articles(s, articles.first, articles.last);
  // The distinct paragraphs, with their articles.
  std::vector<std::pair<size_t, std::string>> paragraphs;
  for (const SquadExample& e : ex)
    if (paragraphs.empty() || paragraphs.back().second != e.context)
      paragraphs.emplace_back(e.article, e.context);
  if (ex.empty() || ex.front().article == ex.back().article)
    fail("{}: the reranker's negatives are paragraphs of other articles: select two or more "
         "articles (--train-articles / --dev-articles)", path);
  std::mt19937_64 rng(seed);
  PairData d;
  d.scored = true;
  for (const SquadExample& e : ex) {
    d.rows.push_back(PairRow{{e.question, e.context}, 1.0});
    for (int k = 0; k < negatives; ++k) {
      size_t j = 0;
      do j = size_t(rng() % paragraphs.size());
      while (paragraphs[j].first == e.article);
      d.rows.push_back(PairRow{{e.question, paragraphs[j].second}, 0.0});
    }
  }
  return d;
}

}  // namespace

PairData read_rerank_file(const std::string& path, const ArticleRange& articles, uint64_t seed,
                          int negatives) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  PairData d = json ? read_rerank_squad(path, articles, seed, negatives) : read_rerank_tsv(path);
  if (d.rows.size() < 2) fail("{}: {} row(s); training needs at least 2", path, d.rows.size());
  return d;
}

double reranker_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                 const std::vector<PairRow>& rows, int max_seq_length) {
  if (model.heads().resolved_kind() != HeadKind::kRegression)
    fail("a reranker is a one-output classifier (regression head), this model has a {} head",
         head_kind_name(model.heads().resolved_kind()));
  if (std::string(be.name()) != "cpu" && std::string(be.name()) != "reference")
    fail("reranker training runs on the cpu and reference backends, not '{}' (its head's "
         "backward runs on the host)", be.name());
  const int H = model.config().hidden_size, B = int(rows.size());
  const int max_len = max_seq_length > 0 ? max_seq_length : model.config().max_position_embeddings;
  std::vector<Encoding> enc;
  int T = 0;
  for (const PairRow& r : rows) {
    enc.push_back(tokenizer.encode(r.texts.at(0), r.texts.at(1), max_len));
    T = std::max(T, int(enc.back().input_ids.size()));
  }
  std::vector<int32_t> ids(size_t(B) * T, model.config().pad_token_id), types(size_t(B) * T, 0),
      mask(size_t(B) * T, 0);
  for (int b = 0; b < B; ++b) {
    const Encoding& e = enc[size_t(b)];
    std::copy(e.input_ids.begin(), e.input_ids.end(), ids.begin() + size_t(b) * T);
    std::copy(e.token_type_ids.begin(), e.token_type_ids.end(), types.begin() + size_t(b) * T);
    std::fill_n(mask.begin() + size_t(b) * T, e.input_ids.size(), 1);
  }
  model.forward(be, EncoderInputs{B, T, ids.data(), types.data(), mask.data()}, Targets{}, true);
  const float* hidden = model.last_hidden_state();
  const ParamLayout& layout = model.layout();
  const float* params = model.params();
  float* grads = model.grads(be);  // host memory on these backends
  const size_t pw = layout.at("bert.pooler.dense.weight").offset,
               pb = layout.at("bert.pooler.dense.bias").offset,
               cw = layout.at("classifier.weight").offset, cb = layout.at("classifier.bias").offset;
  // BertPooler: tanh(W · h[CLS] + b); dropout on it (the classifier's input); one logit.
  std::vector<float> pooled(size_t(B) * H), dropped;
  for (int b = 0; b < B; ++b)
    for (int o = 0; o < H; ++o) {
      double u = params[pb + size_t(o)];
      for (int i = 0; i < H; ++i)
        u += double(params[pw + size_t(o) * H + i]) * hidden[size_t(b) * T * H + i];
      pooled[size_t(b) * H + o] = float(std::tanh(u));
    }
  const Dropout& drop = model.dropout();
  const uint64_t head_seed = dropout_seed(drop.seed, drop.step, Dropout::head_site());
  dropped = pooled;
  if (drop.prob > 0) be.dropout(dropped.data(), dropped.size(), drop.prob, head_seed);
  // BCEWithLogitsLoss (mean): max(z, 0) − z·y + log(1 + e^−|z|); ∂/∂z = (σ(z) − y) / B.
  double loss = 0;
  std::vector<float> ddropped(size_t(B) * H);
  for (int b = 0; b < B; ++b) {
    double z = params[cb];
    for (int i = 0; i < H; ++i) z += double(params[cw + size_t(i)]) * dropped[size_t(b) * H + i];
    const double y = rows[size_t(b)].score;
    loss += (std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::abs(z)))) / B;
    const double dz = (1.0 / (1.0 + std::exp(-z)) - y) / B;
    grads[cb] += float(dz);
    for (int i = 0; i < H; ++i) {
      grads[cw + size_t(i)] += float(dz * dropped[size_t(b) * H + i]);
      ddropped[size_t(b) * H + i] = float(dz * params[cw + size_t(i)]);
    }
  }
  if (drop.prob > 0) be.dropout(ddropped.data(), ddropped.size(), drop.prob, head_seed);
  std::vector<float> dhidden(size_t(B) * T * H, 0.0f);
  for (int b = 0; b < B; ++b) {
    const float* h = hidden + size_t(b) * T * H;  // the [CLS] row
    float* dh = dhidden.data() + size_t(b) * T * H;
    for (int o = 0; o < H; ++o) {
      const float p = pooled[size_t(b) * H + o];
      const float du = ddropped[size_t(b) * H + o] * (1.0f - p * p);
      grads[pb + size_t(o)] += du;
      for (int i = 0; i < H; ++i) {
        grads[pw + size_t(o) * H + i] += du * h[i];
        dh[i] += du * params[pw + size_t(o) * H + i];
      }
    }
  }
  model.backward_from_hidden(be, dhidden.data());
  return loss;
}

std::map<std::string, double> evaluate_reranker(BertModel& model, const Tokenizer& tokenizer,
                                                Backend& be, const PairData& rows,
                                                int max_seq_length, int batch_size) {
  RerankOptions o;
  o.raw_scores = true;
  o.max_length = max_seq_length;
  o.batch_size = batch_size;
  double mrr = 0, ndcg = 0;
  size_t queries = 0;
  for (size_t i = 0; i < rows.rows.size();) {
    size_t j = i;
    std::vector<std::string> passages;
    std::vector<bool> relevant;
    while (j < rows.rows.size() && rows.rows[j].texts[0] == rows.rows[i].texts[0]) {
      passages.push_back(rows.rows[j].texts[1]);
      relevant.push_back(rows.rows[j].score >= 0.5);
      ++j;
    }
    const size_t hits = size_t(std::count(relevant.begin(), relevant.end(), true));
    if (hits > 0 && hits < relevant.size()) {
      const std::vector<float> s = rerank_scores(model, tokenizer, be, rows.rows[i].texts[0],
                                                 passages, o, nullptr);
      std::vector<size_t> order(s.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a] > s[b]; });
      double dcg = 0, idcg = 0, rr = 0;
      for (size_t r = 0; r < std::min<size_t>(10, order.size()); ++r) {
        if (relevant[order[r]]) {
          dcg += 1.0 / std::log2(double(r) + 2);
          if (rr == 0) rr = 1.0 / double(r + 1);
        }
        if (r < hits) idcg += 1.0 / std::log2(double(r) + 2);
      }
      mrr += rr, ndcg += dcg / idcg;
      ++queries;
    }
    i = j;
  }
  if (queries == 0) return {{"mrr@10", 0.0}, {"ndcg@10", 0.0}, {"queries", 0.0}};
  return {{"mrr@10", mrr / double(queries)}, {"ndcg@10", ndcg / double(queries)},
          {"queries", double(queries)}};
}

}  // namespace bertrt
