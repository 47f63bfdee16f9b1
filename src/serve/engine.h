// What `bertrt serve` runs: the served models, the jobs the HTTP threads queue for them, and the
// batching thread's work (one forward for the jobs BatchQueue::take packed together). A client of
// the library calls `bertrt embed` / `rerank` / `predict` make (embed/embedder.h,
// train/task_inference.h), so the answers are theirs.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "embed/embedder.h"
#include "io/model_io.h"
#include "serve/batch_queue.h"
#include "serve/metrics.h"

namespace bertrt::serve {

struct ServedModel {
  std::string name;  // what requests name in "model"; never a path
  std::string path;
  LoadedModel loaded;
  bool embedding = false;   // has a sentence-embedding head (/embed, /v1/embeddings)
  bool reranker = false;    // a one-output sequence classifier (/rerank, /predict)
  bool classifier = false;  // a sequence classifier or regressor (/predict)
  std::vector<std::string> labels;  // /predict's label of each output
  int embed_max_length = 0;   // tokens past which /embed truncates
  int rerank_max_length = 0;  // a (query, text) pair's tokens (the tokenizer's model_max_length)
  int predict_max_length = 0; // an input's tokens at /predict (the fine-tuning's max_seq_length)
  const char* kind() const;   // TEI's model_type: "embedding", "reranker" or "classifier"
};

enum class JobKind { kEmbed, kRerank, kPredict };

// One request's work. Jobs of the same key share a forward: the same model, route and options.
struct Job {
  JobKind kind = JobKind::kEmbed;
  ServedModel* model = nullptr;
  std::string key;
  size_t tokens = 0;
  std::vector<std::string> texts;  // embed inputs, rerank texts, predict first texts
  std::vector<std::optional<std::string>> pairs;  // predict: each input's second text
  std::string query;                              // rerank
  EmbedOptions embed;
  std::chrono::steady_clock::time_point queued = std::chrono::steady_clock::now();
  // The answer: embed [texts, width] row-major; rerank one logit a text; predict [inputs, K]
  // logits. An error message instead when the forward failed.
  struct Result {
    std::vector<float> values;
    size_t width = 0;
    std::string error;
  };
  std::promise<Result> done;
};

using JobQueue = BatchQueue<Job>;

// Runs the jobs of one take() (one key) in one call of the library and fulfils each job's
// promise; an exception fails every job of the batch with its message.
void run_batch(std::vector<std::shared_ptr<Job>>& batch, Backend& be, int max_batch_tokens,
               Metrics& metrics);

// The batching thread: take, run, until the queue is closed and drained.
void batching_loop(JobQueue& queue, Backend& be, int max_batch_tokens, size_t max_batch_requests,
                   Metrics& metrics);

}  // namespace bertrt::serve
