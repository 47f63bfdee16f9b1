// Texts → sentence embeddings, as sentence-transformers' SentenceTransformer.encode computes them
// (the prompt put before each text, lower-cased when the model says so, truncated to
// max_seq_length, the encoder, the embedding head), and (query, passage) pairs → cross-encoder
// scores (CrossEncoder.predict). The one implementation behind `bertrt embed` / `bertrt rerank`,
// bertrt_embed / bertrt_rerank and Model.embed / Model.rerank.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "model/bert_model.h"
#include "tokenizer/tokenizer.h"

namespace bertrt {

struct EmbedOptions {
  int dimensions = 0;     // Matryoshka: keep the first D dimensions (0: all); more is an error
  // L2-normalize after the truncation (encode's normalize_embeddings=True); false: the model's
  // own output (its Normalize module, if it has one, still applies), truncated.
  bool normalize = true;
  // The text put before each input: `prompt` as given, else the model's prompt named
  // `prompt_name`, else its default_prompt_name's, else none.
  std::optional<std::string> prompt;
  std::string prompt_name;
  // A pooling mode for a model without an embedding head ("cls", "mean", "max",
  // "mean_sqrt_len_tokens", "weightedmean", "lasttoken"); empty: the model's head.
  std::string pooling;
  int batch_size = 32;  // sequences a forward, when batches are padded
  // Packed batches (the default where the backend's packed_attention() says they pay): inputs
  // in order, as many as fit in max_batch_tokens tokens a forward, without padding (TEI's
  // --max-batch-tokens; 2048, not TEI's 16384: on a CPU a forward's activations then stay in
  // the last-level cache, 13 MB for the [2048, 1536] intermediate of an all-MiniLM-L6-v2-sized
  // model, which took a third less CPU time than 16384 on a mix of SQuAD texts). false:
  // batch_size inputs a forward, longest first, padded.
  bool packing = true;
  int max_batch_tokens = 2048;
};

struct EmbedStats {
  size_t texts = 0;
  size_t tokens = 0;     // tokens run through the encoder, [CLS] and [SEP] included
  size_t truncated = 0;  // inputs cut at the sequence length
  int max_seq_length = 0;
};

// The embedding head `options` runs: the model's, or the one --pooling makes. Throws
// bertrt::Error saying how to get one when the model has none and no pooling is given, or when
// the pooling name is unknown.
EmbeddingConfig embedding_head(const BertModel& model, const EmbedOptions& options);

// The width of the embeddings embed_texts returns; throws bertrt::Error naming --dimensions when
// options.dimensions is above the model's width or negative.
int embedding_dim(const BertModel& model, const EmbedOptions& options);

// Embeddings [texts.size(), embedding_dim] row-major, in input order. Throws bertrt::Error naming
// the input (its index) that is not valid UTF-8, and for a prompt name the model lacks.
std::vector<float> embed_texts(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                               const std::vector<std::string>& texts, const EmbedOptions& options,
                               EmbedStats* stats = nullptr);

// The tokens each text takes before truncation ([CLS] prompt text [SEP]), and the length past
// which embed_texts truncates: a server checks its inputs with them before queueing any.
std::vector<int> embed_token_lengths(const BertModel& model, const Tokenizer& tokenizer,
                                     const std::vector<std::string>& texts,
                                     const EmbedOptions& options);
int embed_max_length(const BertModel& model, const EmbedOptions& options);

struct RerankOptions {
  bool raw_scores = false;  // the logit; otherwise sigmoid(logit), CrossEncoder.predict's default
  // Tokens a pair keeps (longest-first); 0: max_position_embeddings. CrossEncoder truncates at
  // its tokenizer's model_max_length: callers pass tokenizer_max_length(metadata, ...).
  int max_length = 0;
  int batch_size = 32;  // as EmbedOptions'
  bool packing = true;
  int max_batch_tokens = 2048;
};

// The tokenizer's model_max_length the converter recorded (metadata
// "tokenizer.model_max_length"), capped at max_position_embeddings; max_position_embeddings when
// there is none.
int tokenizer_max_length(const std::map<std::string, std::string>& metadata,
                         int max_position_embeddings);

// One score per passage for (query, passage), in passage order, from a one-output sequence
// classifier (a sentence-transformers CrossEncoder: a regression head). Throws bertrt::Error when
// the model has another head.
std::vector<float> rerank_scores(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                 const std::string& query, const std::vector<std::string>& passages,
                                 const RerankOptions& options, EmbedStats* stats = nullptr);
// The same for pairs of their own queries (queries[i], passages[i]): a server packs the pairs of
// several requests into one forward.
std::vector<float> rerank_pairs(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                const std::vector<std::string>& queries,
                                const std::vector<std::string>& passages,
                                const RerankOptions& options, EmbedStats* stats = nullptr);

}  // namespace bertrt
