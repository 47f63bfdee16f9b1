#include "train/embedding_trainer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/utf8.h"
#include "heads/embedding_head_ops.h"
#include "tasks/squad.h"
#include "tasks/tsv_fields.h"

namespace bertrt {

namespace {

PairData read_pair_tsv(const std::string& path, const PairFileOptions& o) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  const std::vector<std::string> header =
      read_tsv_header(in, path, "anchor and positive, or sentence1 and sentence2");
  auto find = [&](const std::string& name) -> int {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return int(i);
    return -1;
  };
  std::vector<int> cols;
  int score = -1;
  PairData d;
  if (find("anchor") >= 0 && find("positive") >= 0) {
    cols = {find("anchor"), find("positive")};
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i].rfind("negative", 0) == 0) cols.push_back(int(i));
  } else if (find("sentence1") >= 0 && find("sentence2") >= 0) {
    cols = {find("sentence1"), find("sentence2")};
    score = find("score");
  } else {
    fail("{}: line 1: the header names neither anchor and positive (negative columns optional) nor "
         "sentence1 and sentence2 (score optional): {}", path, fmt::join(header, ", "));
  }
  d.scored = score >= 0;
  double lo = o.score_lo, hi = o.score_hi;
  if (lo == hi) {
    const bool stsb = find("genre") >= 0 && find("filename") >= 0;  // GLUE STS-B's columns
    lo = 0, hi = stsb ? 5 : 1;
  }
  const int need = std::max(score, *std::max_element(cols.begin(), cols.end())) + 1;
  size_t n = 1;
  std::string line;
  while (next_tsv_line(in, path, line, n)) {
    const std::vector<std::string> f = split_tabs(line);
    if (int(f.size()) < need)
      fail("{}: line {}: {} tab-separated fields, the header's columns need {}", path, n, f.size(),
           need);
    PairRow r;
    for (int c : cols) r.texts.push_back(f[size_t(c)]);
    if (score >= 0) {
      char* end = nullptr;
      const double s = std::strtod(f[size_t(score)].c_str(), &end);
      if (f[size_t(score)].empty() || *end != '\0' || !std::isfinite(s))
        fail("{}: line {}: score '{}' is not a number", path, n, f[size_t(score)]);
      if (s < lo || s > hi)
        fail("{}: line {}: score {} is outside the range [{}, {}] (--score-range)", path, n, s, lo,
             hi);
      r.score = (s - lo) / (hi - lo);
    }
    d.rows.push_back(std::move(r));
  }
  return d;
}

// The texts of `rows`, column by column: column k of row i is entry k·N + i.
std::vector<std::string> by_column(const std::vector<PairRow>& rows) {
  const size_t K = rows.front().texts.size(), N = rows.size();
  std::vector<std::string> out(K * N);
  for (size_t i = 0; i < N; ++i) {
    if (rows[i].texts.size() != K) fail("training rows differ in their number of texts");
    for (size_t k = 0; k < K; ++k) out[k * N + i] = rows[i].texts[k];
  }
  return out;
}

}  // namespace

PairData read_pair_file(const std::string& path, const PairFileOptions& options) {
  PairData d;
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  if (json) {
    const SquadDataset s = read_squad(path);
    const std::vector<SquadExample> ex =
        options.articles.all() ? s.examples
                               : select_articles(s, options.articles.first, options.articles.last);
    for (const SquadExample& e : ex) d.rows.push_back(PairRow{{e.question, e.context}, 0});
  } else {
    d = read_pair_tsv(path, options);
  }
  if (d.rows.size() < 2)
    fail("{}: {} training row(s); a contrastive loss needs at least 2", path, d.rows.size());
  return d;
}

double embedding_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                  const EmbeddingLoss& loss, const std::vector<PairRow>& rows) {
  if (!model.heads().embedding)
    fail("the model has no sentence-embedding head (convert a sentence-transformers folder, or "
         "give --pooling)");
  if (loss.needs_labels() == false && rows.front().texts.size() < 2)
    fail("mnrl needs (anchor, positive) rows");
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H);
  const int max_len = head.max_seq_length > 0 ? head.max_seq_length
                                               : model.config().max_position_embeddings;
  const std::vector<std::string> texts = by_column(rows);
  const int N = int(rows.size()), K = int(texts.size()) / N, B = int(texts.size());
  // One padded batch of every text, as Transformer.tokenize pads a column (here all columns).
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(B));
  int T = 0;
  for (int b = 0; b < B; ++b) {
    const std::string& t = texts[size_t(b)];
    Encoding e = tokenizer.encode(head.do_lower_case ? lower_text(t) : t, std::nullopt);
    if (int(e.input_ids.size()) > max_len) {
      e.input_ids.resize(size_t(max_len));
      e.input_ids.back() = tokenizer.sep_id();
    }
    ids[size_t(b)] = std::move(e.input_ids);
    T = std::max(T, int(ids[size_t(b)].size()));
  }
  std::vector<int32_t> flat(size_t(B) * T, model.config().pad_token_id), types(size_t(B) * T, 0),
      mask(size_t(B) * T, 0);
  for (int b = 0; b < B; ++b) {
    std::copy(ids[size_t(b)].begin(), ids[size_t(b)].end(), flat.begin() + size_t(b) * T);
    std::fill_n(mask.begin() + size_t(b) * T, ids[size_t(b)].size(), 1);
  }
  model.forward(be, EncoderInputs{B, T, flat.data(), types.data(), mask.data()}, Targets{}, true);
  // The head, the loss and their backward as ops on `be`: only the loss comes back to the host.
  const float* hidden = model.last_hidden_state(be);
  const float* params = model.params(be);
  EmbeddingHeadActs acts;
  const float* e = embedding_head_forward(be, head, model.layout(), params, hidden, mask.data(),
                                          nullptr, B, T, H, acts);
  DeviceArray<float> de(be, size_t(B) * D);
  be.fill(de.data(), 0.0f, size_t(B) * D);
  std::vector<double> labels;
  for (const PairRow& r : rows) labels.push_back(r.score);
  const double value = embedding_loss(be, loss, e, K, N, D, labels, de.data());
  embedding_head_backward(be, head, model.layout(), params, model.grads(be), hidden, acts,
                          de.data(), H, model.hidden_gradient(be));
  model.backward_from_hidden(be);
  return value;
}

void finetune_embeddings(Trainer& trainer, BertModel& model, const Tokenizer& tokenizer,
                         Backend& be, const EmbeddingLoss& loss, const PairData& train,
                         int batch_size, int64_t total_steps, uint64_t seed,
                         const std::function<void(const EmbeddingStepLog&)>& on_step) {
  if (batch_size < 2) fail("--batch-size {}: in-batch negatives need at least 2 rows", batch_size);
  std::mt19937_64 rng(seed);
  std::vector<size_t> order(train.rows.size());
  const int64_t per_epoch = int64_t((train.rows.size() + size_t(batch_size) - 1) / size_t(batch_size));
  StepClock clock;
  // A restored trainer continues with the batch the uninterrupted run takes next.
  int64_t epoch = -1;
  size_t cursor = 0;
  for (int64_t s = 0; s <= trainer.steps_done() && s < total_steps; ++s) {
    const int64_t e = s / per_epoch;
    if (e != epoch) {
      epoch = e;
      std::iota(order.begin(), order.end(), size_t(0));
      std::shuffle(order.begin(), order.end(), rng);
      cursor = 0;
    }
    if (s < trainer.steps_done()) cursor += size_t(batch_size);
  }
  while (trainer.steps_done() < total_steps) {
    const int64_t s = trainer.steps_done();
    if (s / per_epoch != epoch) {
      epoch = s / per_epoch;
      std::iota(order.begin(), order.end(), size_t(0));
      std::shuffle(order.begin(), order.end(), rng);
      cursor = 0;
    }
    const size_t end = std::min(order.size(), cursor + size_t(batch_size));
    std::vector<PairRow> batch;
    for (size_t i = cursor; i < end; ++i) batch.push_back(train.rows[order[i]]);
    cursor = end;
    EmbeddingStepLog log;
    log.result = trainer.step_with(
        [&] { return embedding_forward_backward(model, tokenizer, be, loss, batch); });
    clock.lap(0);
    log.step = trainer.steps_done();
    log.total_steps = total_steps;
    log.epoch = epoch;
    log.elapsed_seconds = clock.elapsed_seconds();
    on_step(log);
  }
}

}  // namespace bertrt
