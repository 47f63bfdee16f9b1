#include "serve/engine.h"

#include "core/error.h"
#include "train/task_batch.h"
#include "train/task_inference.h"

namespace bertrt::serve {

const char* ServedModel::kind() const {
  if (embedding) return "embedding";
  if (reranker) return "reranker";
  return "classifier";
}

namespace {

Job::Result run_embed(const std::vector<std::shared_ptr<Job>>& batch, Backend& be,
                      int max_batch_tokens, size_t* tokens) {
  Job& first = *batch[0];
  std::vector<std::string> texts;
  for (const auto& j : batch) texts.insert(texts.end(), j->texts.begin(), j->texts.end());
  EmbedOptions opts = first.embed;
  opts.max_batch_tokens = max_batch_tokens;
  LoadedModel& m = first.model->loaded;
  EmbedStats st;
  Job::Result all;
  all.values = embed_texts(*m.model, *m.tokenizer, be, texts, opts, &st);
  all.width = size_t(embedding_dim(*m.model, opts));
  *tokens = st.tokens;
  return all;
}

Job::Result run_rerank(const std::vector<std::shared_ptr<Job>>& batch, Backend& be,
                       int max_batch_tokens, size_t* tokens) {
  std::vector<std::string> queries, texts;
  for (const auto& j : batch) {
    queries.insert(queries.end(), j->texts.size(), j->query);
    texts.insert(texts.end(), j->texts.begin(), j->texts.end());
  }
  ServedModel& sm = *batch[0]->model;
  RerankOptions opts;
  opts.raw_scores = true;  // each request's own raw_scores is applied to its logits
  opts.max_length = sm.rerank_max_length;
  opts.max_batch_tokens = max_batch_tokens;
  EmbedStats st;
  Job::Result all;
  all.values = rerank_pairs(*sm.loaded.model, *sm.loaded.tokenizer, be, queries, texts, opts, &st);
  all.width = 1;
  *tokens = st.tokens;
  return all;
}

Job::Result run_predict(const std::vector<std::shared_ptr<Job>>& batch, Backend& be,
                        size_t* tokens) {
  ServedModel& sm = *batch[0]->model;
  std::vector<TextExample> examples;
  for (const auto& j : batch)
    for (size_t i = 0; i < j->texts.size(); ++i)
      examples.push_back(TextExample{j->texts[i], j->pairs[i], -1, 0});
  const std::vector<EncodedExample> enc =
      encode_examples(*sm.loaded.tokenizer, examples, sm.predict_max_length);
  *tokens = 0;
  for (const EncodedExample& e : enc) *tokens += e.input_ids.size();
  const SequenceOutputs out = run_sequences(*sm.loaded.model, be, enc, int(enc.size()),
                                            sm.loaded.tokenizer->pad_id(), false);
  Job::Result all;
  all.width = size_t(sm.loaded.model->heads().num_labels());
  for (const auto& row : out.rows) all.values.insert(all.values.end(), row.begin(), row.end());
  return all;
}

}  // namespace

void run_batch(std::vector<std::shared_ptr<Job>>& batch, Backend& be, int max_batch_tokens,
               Metrics& metrics) {
  if (batch.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  Job::Result all;
  size_t tokens = 0;
  std::string error;
  try {
    switch (batch[0]->kind) {
      case JobKind::kEmbed: all = run_embed(batch, be, max_batch_tokens, &tokens); break;
      case JobKind::kRerank: all = run_rerank(batch, be, max_batch_tokens, &tokens); break;
      case JobKind::kPredict: all = run_predict(batch, be, &tokens); break;
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  const auto end = std::chrono::steady_clock::now();
  std::vector<double> waits;
  size_t row = 0;
  for (const auto& j : batch) {
    waits.push_back(std::chrono::duration<double>(start - j->queued).count());
    Job::Result r;
    if (!error.empty()) {
      r.error = error;
    } else {
      r.width = all.width;
      r.values.assign(all.values.begin() + std::ptrdiff_t(row * all.width),
                      all.values.begin() + std::ptrdiff_t((row + j->texts.size()) * all.width));
      row += j->texts.size();
    }
    j->done.set_value(std::move(r));
  }
  metrics.batch(batch.size(), tokens, std::chrono::duration<double>(end - start).count(), waits);
}

void batching_loop(JobQueue& queue, Backend& be, int max_batch_tokens, size_t max_batch_requests,
                   Metrics& metrics) {
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch = queue.take(size_t(max_batch_tokens), max_batch_requests);
    if (batch.empty()) return;
    run_batch(batch, be, max_batch_tokens, metrics);
  }
}

}  // namespace bertrt::serve
