#include "train/embedding_trainer.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/json_excerpt.h"
#include "core/utf8.h"
#include "heads/embedding_head.h"
#include "heads/pooling.h"
#include "tasks/squad.h"
#include "train/cached_mnrl.h"
#include "tasks/tsv_fields.h"

namespace bertrt {

namespace {

// Which columns of a header (TSV) or keys of an object (JSONL) a pair file's rows take.
struct PairColumns {
  std::vector<int> texts;
  int score = -1;
  bool stsb = false;  // GLUE STS-B's columns: scores 0–5 by default
};

PairColumns pair_columns(const std::vector<std::string>& names, const std::string& where) {
  auto find = [&](const std::string& name) -> int {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return int(i);
    return -1;
  };
  PairColumns c;
  if (find("anchor") >= 0 && find("positive") >= 0) {
    c.texts = {find("anchor"), find("positive")};
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i].rfind("negative", 0) == 0) c.texts.push_back(int(i));
  } else if (find("sentence1") >= 0 && find("sentence2") >= 0) {
    c.texts = {find("sentence1"), find("sentence2")};
    c.score = find("score");
  } else {
    fail("{} name neither anchor and positive (negative columns optional) nor sentence1 and "
         "sentence2 (score optional): {}", where, fmt::join(names, ", "));
  }
  c.stsb = find("genre") >= 0 && find("filename") >= 0;
  return c;
}

// The score's range [lo, hi]: the options', else [0, 5] for GLUE STS-B and [0, 1] otherwise.
std::pair<double, double> score_range(const PairFileOptions& o, bool stsb) {
  if (o.score_lo != o.score_hi) return {o.score_lo, o.score_hi};
  return {0.0, stsb ? 5.0 : 1.0};
}

double mapped_score(double s, std::pair<double, double> range, const std::string& path, size_t n) {
  if (s < range.first || s > range.second)
    fail("{}: line {}: score {} is outside the range [{}, {}] (--score-range)", path, n, s,
         range.first, range.second);
  return (s - range.first) / (range.second - range.first);
}

PairData read_pair_tsv(const std::string& path, const PairFileOptions& o) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  const std::vector<std::string> header =
      read_tsv_header(in, path, "anchor and positive, or sentence1 and sentence2");
  const PairColumns c = pair_columns(header, path + ": line 1: the header's columns");
  PairData d;
  d.scored = c.score >= 0;
  const auto range = score_range(o, c.stsb);
  const int need = std::max(c.score, *std::max_element(c.texts.begin(), c.texts.end())) + 1;
  size_t n = 1;
  std::string line;
  while (next_tsv_line(in, path, line, n)) {
    const std::vector<std::string> f = split_tabs(line);
    if (int(f.size()) < need)
      fail("{}: line {}: {} tab-separated fields, the header's columns need {}", path, n, f.size(),
           need);
    PairRow r;
    for (int col : c.texts) r.texts.push_back(f[size_t(col)]);
    if (c.score >= 0) {
      const std::string& text = f[size_t(c.score)];
      char* end = nullptr;
      const double s = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(s))
        fail("{}: line {}: score '{}' is not a number", path, n, text);
      r.score = mapped_score(s, range, path, n);
    }
    d.rows.push_back(std::move(r));
  }
  return d;
}

// JSON Lines: one object a line with the TSV header's names as keys; the first object's keys
// decide the layout (negative keys in their order there), every line must have them.
PairData read_pair_jsonl(const std::string& path, const PairFileOptions& o) {
  std::ifstream in(path);
  if (!in) fail("{}: cannot open", path);
  PairData d;
  std::vector<std::string> keys;
  PairColumns c;
  std::pair<double, double> range;
  size_t n = 0, first = 0;
  std::string line;
  while (next_tsv_line(in, path, line, n)) {
    if (n == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a byte-order mark
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line, nullptr, false);
    if (j.is_discarded()) fail("{}: line {}: not JSON", path, n);
    if (!j.is_object()) fail("{}: line {}: expected a JSON object, got {}", path, n, json_excerpt(j));
    if (keys.empty()) {
      for (const auto& [k, v] : j.items()) keys.push_back(k);
      first = n;
      c = pair_columns(keys, fmt::format("{}: line {}: the object's keys", path, n));
      d.scored = c.score >= 0;
      range = score_range(o, false);
    }
    PairRow r;
    for (int col : c.texts) {
      const std::string& key = keys[size_t(col)];
      const auto it = j.find(key);
      if (it == j.end()) fail("{}: line {}: no \"{}\" (line {} has it)", path, n, key, first);
      if (!it->is_string())
        fail("{}: line {}: \"{}\" is {}, expected a string", path, n, key, json_excerpt(*it));
      r.texts.push_back(it->get<std::string>());
    }
    if (c.score >= 0) {
      const auto it = j.find("score");
      if (it == j.end()) fail("{}: line {}: no \"score\"", path, n);
      if (!it->is_number() || !std::isfinite(it->get<double>()))
        fail("{}: line {}: \"score\" is {}, expected a number", path, n, json_excerpt(*it));
      r.score = mapped_score(it->get<double>(), range, path, n);
    }
    d.rows.push_back(std::move(r));
  }
  return d;
}

}  // namespace

PairData read_pair_file(const std::string& path, const PairFileOptions& options) {
  PairData d;
  auto ends_with = [&](const char* ext) {
    const size_t k = std::strlen(ext);
    return path.size() >= k && path.compare(path.size() - k, k, ext) == 0;
  };
  if (ends_with(".jsonl")) {
    d = read_pair_jsonl(path, options);
  } else if (ends_with(".json")) {
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

namespace {

void check_trainable(BertModel& model, Backend& be) {
  if (!model.heads().embedding)
    fail("the model has no sentence-embedding head (convert a sentence-transformers folder, or "
         "give --pooling)");
  if (std::string(be.name()) != "cpu" && std::string(be.name()) != "reference")
    fail("sentence-embedding training runs on the cpu and reference backends, not '{}' (the "
         "embedding head's backward runs on the host)", be.name());
}

}  // namespace

TrainingEmbeddings embed_for_training(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                      const std::vector<std::string>& texts,
                                      bool keep_activations) {
  check_trainable(model, be);
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H), P = head.pooled_dim(H);
  const int max_len = head.max_seq_length > 0 ? head.max_seq_length
                                               : model.config().max_position_embeddings;
  const int B = int(texts.size());
  // One padded batch, as Transformer.tokenize pads a column.
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
  TrainingEmbeddings out;
  out.B = B, out.T = T;
  std::vector<int32_t> flat(size_t(B) * T, model.config().pad_token_id), types(size_t(B) * T, 0);
  out.mask.assign(size_t(B) * T, 0);
  for (int b = 0; b < B; ++b) {
    std::copy(ids[size_t(b)].begin(), ids[size_t(b)].end(), flat.begin() + size_t(b) * T);
    std::fill_n(out.mask.begin() + size_t(b) * T, ids[size_t(b)].size(), 1);
  }
  // Without activations the forward is an inference one, unless dropout is on: its masks come
  // only with a training forward (one batch's activations, freed by the next shape).
  model.forward(be, EncoderInputs{B, T, flat.data(), types.data(), out.mask.data()}, Targets{},
                keep_activations || model.dropout().any());
  out.hidden.assign(model.last_hidden_state(), model.last_hidden_state() + size_t(B) * T * H);
  std::vector<float> pooled(size_t(B) * P);
  pooling_forward(head.pooling, out.hidden.data(), out.mask.data(), nullptr, B, T, H,
                  pooled.data());
  out.dense_out = dense_forward(head, model.layout(), model.params(), pooled.data(), B, H,
                                keep_activations ? &out.acts : nullptr);
  out.embeddings = head.normalize ? l2_normalize(out.dense_out, B, D) : out.dense_out;
  if (!keep_activations) {
    out.hidden = {}, out.dense_out = {};
    out.mask = {};
  }
  return out;
}

void embeddings_backward(BertModel& model, Backend& be, const TrainingEmbeddings& e,
                         std::vector<float> dembeddings) {
  check_trainable(model, be);
  if (e.hidden.empty()) fail("embeddings_backward: the forward kept no activations");
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H), B = e.B, T = e.T;
  if (dembeddings.size() != size_t(B) * D)
    fail("embeddings_backward: {} gradient values for {} embeddings of width {}",
         dembeddings.size(), B, D);
  if (head.normalize) dembeddings = l2_normalize_backward(e.dense_out, dembeddings, B, D);
  float* grads = model.grads(be);  // host memory on these backends
  const std::vector<float> dpooled = dense_backward(head, model.layout(), model.params(), grads,
                                                    e.acts, std::move(dembeddings), B, H);
  std::vector<float> dhidden(size_t(B) * T * H, 0.0f);
  pooling_backward(head.pooling, dpooled.data(), e.hidden.data(), e.mask.data(), nullptr, B, T, H,
                   dhidden.data());
  model.backward_from_hidden(be, dhidden.data());
}

std::vector<std::string> texts_by_column(const std::vector<PairRow>& rows) {
  const size_t K = rows.front().texts.size(), N = rows.size();
  std::vector<std::string> out(K * N);
  for (size_t i = 0; i < N; ++i) {
    if (rows[i].texts.size() != K) fail("training rows differ in their number of texts");
    for (size_t k = 0; k < K; ++k) out[k * N + i] = rows[i].texts[k];
  }
  return out;
}

double embedding_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                  const EmbeddingLoss& loss, const std::vector<PairRow>& rows) {
  check_trainable(model, be);
  if (loss.needs_labels() == false && rows.front().texts.size() < 2)
    fail("mnrl needs (anchor, positive) rows");
  const EmbeddingConfig& head = *model.heads().embedding;
  const int D = head.dim(model.config().hidden_size);
  const std::vector<std::string> texts = texts_by_column(rows);
  const int N = int(rows.size()), K = int(texts.size()) / N, B = int(texts.size());
  // One padded batch of every text, as Transformer.tokenize pads a column (here all columns).
  const TrainingEmbeddings emb = embed_for_training(model, tokenizer, be, texts, true);
  const std::vector<float>& e = emb.embeddings;
  std::vector<std::vector<float>> cols(static_cast<size_t>(K)), dcols;
  for (int k = 0; k < K; ++k)
    cols[size_t(k)].assign(e.begin() + size_t(k) * N * D, e.begin() + size_t(k + 1) * N * D);
  std::vector<double> labels;
  for (const PairRow& r : rows) labels.push_back(r.score);
  const double value = embedding_loss(loss, cols, N, D, labels, dcols);
  std::vector<float> de(size_t(B) * D);
  for (int k = 0; k < K; ++k)
    std::copy(dcols[size_t(k)].begin(), dcols[size_t(k)].end(), de.begin() + size_t(k) * N * D);
  embeddings_backward(model, be, emb, std::move(de));
  return value;
}

void finetune_pair_rows(Trainer& trainer, const PairData& train, int batch_size,
                        int64_t total_steps, uint64_t seed,
                        const std::function<double(const std::vector<PairRow>&)>& step,
                        const std::function<void(const EmbeddingStepLog&)>& on_step) {
  if (batch_size < 1) fail("--batch-size {}: expected at least 1", batch_size);
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
    log.result = trainer.step_with([&] { return step(batch); });
    clock.lap(0);
    log.step = trainer.steps_done();
    log.total_steps = total_steps;
    log.epoch = epoch;
    log.elapsed_seconds = clock.elapsed_seconds();
    on_step(log);
  }
}

void finetune_embeddings(Trainer& trainer, BertModel& model, const Tokenizer& tokenizer,
                         Backend& be, const EmbeddingLoss& loss, const PairData& train,
                         int batch_size, int64_t total_steps, uint64_t seed,
                         const std::function<void(const EmbeddingStepLog&)>& on_step) {
  if (batch_size < 2) fail("--batch-size {}: in-batch negatives need at least 2 rows", batch_size);
  finetune_pair_rows(
      trainer, train, batch_size, total_steps, seed,
      [&](const std::vector<PairRow>& batch) {
        return loss.mini_batch_size > 0
                   ? cached_mnrl_forward_backward(model, tokenizer, be, loss, batch,
                                                  loss.mini_batch_size)
                   : embedding_forward_backward(model, tokenizer, be, loss, batch);
      },
      on_step);
}

}  // namespace bertrt
