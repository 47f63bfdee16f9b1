// Fine-tuning of a cross-encoder reranker as sentence-transformers' CrossEncoder.fit does with one
// label: BertForSequenceClassification (the pooler on [CLS], a one-output classifier, the
// regression head kind that `bertrt rerank` reads) trained with BCEWithLogitsLoss on (query,
// passage, label) rows, so that sigmoid(logit) is the relevance `rerank` prints. The pooler and
// classifier run on the host (forward and backward), the encoder's backward through
// BertModel::backward_from_hidden; cpu and reference backends.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tasks/task_definition.h"
#include "train/embedding_trainer.h"

namespace bertrt {

// Rows as PairRow {texts = {query, passage}, score = label in [0, 1]}. A TSV whose header names
// query, passage and label (a label outside [0, 1] or not a number is an error naming the line);
// or SQuAD JSON: (question, its paragraph, 1) and (question, a paragraph of another of the
// selected articles, 0) `negatives` times, the negatives drawn with `seed`. Throws bertrt::Error
// naming the file and line; fewer than two rows, or SQuAD articles fewer than two, are errors.
PairData read_rerank_file(const std::string& path, const ArticleRange& articles, uint64_t seed,
                          int negatives = 1);

// One step's forward and backward: mean BCEWithLogitsLoss of the rows' logits against their
// labels; gradients added to model.grads(be). Pairs are truncated longest-first at
// max_seq_length (0: the model's max_position_embeddings). The model's head must be a one-output
// regression head. Dropout (model.set_dropout) applies in the encoder and on the classifier's
// input, as BertForSequenceClassification's.
double reranker_forward_backward(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                 const std::vector<PairRow>& rows, int max_seq_length);

// CERerankingEvaluator's metrics on `rows` grouped by query (a query's rows in file order are its
// candidates, label ≥ 0.5 relevant; queries without a relevant or an irrelevant candidate are
// skipped): "mrr@10", "ndcg@10" (binary relevance) and "queries".
std::map<std::string, double> evaluate_reranker(BertModel& model, const Tokenizer& tokenizer,
                                                Backend& be, const PairData& rows,
                                                int max_seq_length, int batch_size);

}  // namespace bertrt
