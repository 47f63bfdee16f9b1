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
#include "heads/embedding_head_ops.h"
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

void check_trainable(BertModel& model) {
  if (!model.heads().embedding)
    fail("the model has no sentence-embedding head (convert a sentence-transformers folder, or "
         "give --pooling)");
}

// One padded batch of `texts`, as Transformer.tokenize pads a column: ids and mask [B, T].
struct PaddedBatch {
  int B = 0, T = 0;
  std::vector<int32_t> ids, types, mask;
};

PaddedBatch pad_texts(const BertModel& model, const Tokenizer& tokenizer,
                      const std::vector<std::string>& texts) {
  const EmbeddingConfig& head = *model.heads().embedding;
  const int max_len = head.max_seq_length > 0 ? head.max_seq_length
                                               : model.config().max_position_embeddings;
  PaddedBatch p;
  p.B = int(texts.size());
  std::vector<std::vector<int32_t>> ids(texts.size());
  for (size_t b = 0; b < texts.size(); ++b) {
    const std::string& t = texts[b];
    Encoding e = tokenizer.encode(head.do_lower_case ? lower_text(t) : t, std::nullopt);
    if (int(e.input_ids.size()) > max_len) {
      e.input_ids.resize(size_t(max_len));
      e.input_ids.back() = tokenizer.sep_id();
    }
    ids[b] = std::move(e.input_ids);
    p.T = std::max(p.T, int(ids[b].size()));
  }
  p.ids.assign(size_t(p.B) * p.T, model.config().pad_token_id);
  p.types.assign(size_t(p.B) * p.T, 0);
  p.mask.assign(size_t(p.B) * p.T, 0);
  for (size_t b = 0; b < ids.size(); ++b) {
    std::copy(ids[b].begin(), ids[b].end(), p.ids.begin() + b * p.T);
    std::fill_n(p.mask.begin() + b * p.T, ids[b].size(), 1);
  }
  return p;
}

}  // namespace

TrainingEmbeddings embed_for_training(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                      const std::vector<std::string>& texts,
                                      bool keep_activations) {
  check_trainable(model);
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H);
  const PaddedBatch p = pad_texts(model, tokenizer, texts);
  TrainingEmbeddings out;
  out.B = p.B, out.T = p.T;
  // Without activations the forward is an inference one, unless dropout is on: its masks come
  // only with a training forward (one batch's activations, freed by the next shape).
  model.forward(be, EncoderInputs{p.B, p.T, p.ids.data(), p.types.data(), p.mask.data()},
                Targets{}, keep_activations || model.dropout().any());
  const float* e = embedding_head_forward(be, head, model.layout(), model.params(be),
                                          model.last_hidden_state(be), p.mask.data(), nullptr,
                                          p.B, p.T, H, out.acts);
  out.embeddings.resize(size_t(p.B) * D);
  be.download(out.embeddings.data(), e, out.embeddings.size() * sizeof(float));
  be.sync();
  out.kept = keep_activations;
  if (!keep_activations) out.acts = EmbeddingHeadActs{};
  return out;
}

void embeddings_backward(BertModel& model, Backend& be, TrainingEmbeddings& e,
                         const std::vector<float>& dembeddings) {
  check_trainable(model);
  if (!e.kept) fail("embeddings_backward: the forward kept no activations");
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H);
  if (dembeddings.size() != size_t(e.B) * D)
    fail("embeddings_backward: {} gradient values for {} embeddings of width {}",
         dembeddings.size(), e.B, D);
  DeviceArray<float> de(be, dembeddings.size());
  be.upload(de.data(), dembeddings.data(), dembeddings.size() * sizeof(float));
  embedding_head_backward(be, head, model.layout(), model.params(be), model.grads(be),
                          model.last_hidden_state(be), e.acts, de.data(), H,
                          model.hidden_gradient(be));
  model.backward_from_hidden(be);
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
  check_trainable(model);
  if (loss.needs_labels() == false && rows.front().texts.size() < 2)
    fail("mnrl needs (anchor, positive) rows");
  const EmbeddingConfig& head = *model.heads().embedding;
  const int H = model.config().hidden_size, D = head.dim(H);
  const std::vector<std::string> texts = texts_by_column(rows);
  const int N = int(rows.size()), K = int(texts.size()) / N;
  // One padded batch of every text (all columns), then the head, the loss and their backward as
  // ops on `be`: only the loss comes back to the host.
  const PaddedBatch p = pad_texts(model, tokenizer, texts);
  const int B = p.B, T = p.T;
  model.forward(be, EncoderInputs{B, T, p.ids.data(), p.types.data(), p.mask.data()}, Targets{},
                true);
  const float* hidden = model.last_hidden_state(be);
  const float* params = model.params(be);
  EmbeddingHeadActs acts;
  const float* e = embedding_head_forward(be, head, model.layout(), params, hidden, p.mask.data(),
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
