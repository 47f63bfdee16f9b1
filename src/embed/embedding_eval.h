// Evaluation of sentence-embedding models, with sentence-transformers' evaluators' metric names:
//   sts        EmbeddingSimilarityEvaluator: Pearson and Spearman correlation of the cosine of
//              each pair's embeddings with the gold score (cosine_pearson, cosine_spearman)
//   retrieval  InformationRetrievalEvaluator: each query against the whole corpus by cosine
//              (cosine_accuracy@k, cosine_precision@k, cosine_recall@k for k = 1, 3, 5, 10,
//              cosine_mrr@10, cosine_ndcg@10, cosine_map@100)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "embed/embedder.h"
#include "tasks/squad.h"

namespace bertrt {

struct StsPair {
  std::string sentence1, sentence2;
  double score = 0;
};

// A TSV whose header names the columns sentence1, sentence2 and score (GLUE STS-B's train.tsv
// and dev.tsv as they are). Throws bertrt::Error naming the file and line: a missing column, a
// short line, a score that is not a number, fewer than two pairs.
std::vector<StsPair> read_sts_tsv(const std::string& path);

// Queries, a corpus, and for each query the index of its one relevant document.
struct RetrievalSet {
  std::vector<std::string> queries, corpus;
  std::vector<size_t> relevant;
};

// SQuAD as paragraph retrieval: every question of `examples` is a query, every distinct paragraph
// a document (in file order), the question's own paragraph the relevant one.
RetrievalSet squad_retrieval(const std::vector<SquadExample>& examples);

// Metric name → value, in the evaluators' order.
using EmbeddingMetrics = std::vector<std::pair<std::string, double>>;

EmbeddingMetrics evaluate_sts(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                              const std::vector<StsPair>& pairs, const EmbedOptions& options);

// Queries embed with `query_options`, the corpus with `options` (e.g. different prompts).
EmbeddingMetrics evaluate_retrieval(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                    const RetrievalSet& set, const EmbedOptions& options,
                                    const EmbedOptions& query_options);

// The metrics from the rank (1 = best) of each query's relevant document among the corpus by
// cosine, a document scoring the same as the relevant one counted below it
// (InformationRetrievalEvaluator takes torch.topk's order among ties).
EmbeddingMetrics retrieval_metrics(const std::vector<size_t>& ranks);

}  // namespace bertrt
