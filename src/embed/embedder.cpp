#include "embed/embedder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "core/error.h"
#include "core/utf8.h"
#include "heads/embedding_head_ops.h"

namespace bertrt {

namespace {

// One input's ids, [CLS] … [SEP], cut to `max_len` keeping its [SEP] (truncation="longest_first"
// of a single text).
struct Encoded {
  std::vector<int32_t> ids, types;
  int prompt_length = 0;
};

// How inputs are grouped into forwards (EmbedOptions / RerankOptions).
struct Batching {
  int batch_size = 32;
  int max_batch_tokens = 0;  // > 0: packed batches of at most this many tokens
};

// One forward's outputs, as the callers read them: B sequences padded to T, their mask [B, T]
// and their indices in the input. hidden(be) is last_hidden_state [B, T, H] in be's memory (a
// packed batch's rows laid out padded, the padding rows zero: the mask leaves them out).
class Batch {
 public:
  Batch(BertModel& model, int B, int T, const int32_t* mask, const size_t* members,
        const std::vector<int32_t>* cu_seqlens, DeviceArray<float>& padded)
      : B(B), T(T), mask(mask), members(members), model_(model), cu_(cu_seqlens),
        padded_(padded) {}
  const float* hidden(Backend& be) const {
    const float* h = model_.last_hidden_state(be);
    if (!cu_) return h;
    const size_t H = size_t(model_.config().hidden_size), n = size_t(B) * T * H;
    float* p = padded_.ensure(be, n);
    be.fill(p, 0.0f, n);
    for (int b = 0; b < B; ++b) {
      const size_t first = size_t((*cu_)[size_t(b)]), last = size_t((*cu_)[size_t(b) + 1]);
      be.copy(p + size_t(b) * T * H, h + first * H, (last - first) * H * sizeof(float));
    }
    return p;
  }
  const int B, T;
  const int32_t* const mask;
  const size_t* const members;

 private:
  BertModel& model_;
  const std::vector<int32_t>* cu_;
  DeviceArray<float>& padded_;
};

// Runs the inputs through the encoder and hands each forward's Batch to `use`. Padded: batches
// of batch_size, longest first (sentence-transformers' order: a batch pads little), each padded
// to its longest. Packed (max_batch_tokens > 0): input order, as many sequences as fit in
// max_batch_tokens (a longer one alone), one after another without padding; the same outputs up
// to float rounding, without the padding's work.
template <typename Use>
void run_batches(BertModel& model, Backend& be, const std::vector<Encoded>& in,
                 const Batching& how, Use use) {
  std::vector<size_t> order(in.size());
  std::iota(order.begin(), order.end(), size_t(0));
  const bool packed = how.max_batch_tokens > 0;
  if (!packed)  // ties keep input order
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return in[a].ids.size() > in[b].ids.size(); });
  const int32_t pad = model.config().pad_token_id;
  std::vector<int32_t> ids, types, mask, cu;
  DeviceArray<float> padded;
  for (size_t start = 0, end = 0; start < order.size(); start = end) {
    end = start + 1;
    if (packed) {
      size_t tokens = in[order[start]].ids.size();
      while (end < order.size() &&
             tokens + in[order[end]].ids.size() <= size_t(how.max_batch_tokens))
        tokens += in[order[end++]].ids.size();
    } else {
      end = std::min(order.size(), start + size_t(how.batch_size));
    }
    const int B = int(end - start);
    int T = 0;
    for (size_t i = start; i < end; ++i) T = std::max(T, int(in[order[i]].ids.size()));
    mask.assign(size_t(B) * T, 0);
    for (int b = 0; b < B; ++b)
      std::fill_n(mask.begin() + size_t(b) * T, in[order[start + b]].ids.size(), 1);
    if (packed) {
      ids.clear(), types.clear(), cu.assign(1, 0);
      for (size_t i = start; i < end; ++i) {
        const Encoded& e = in[order[i]];
        ids.insert(ids.end(), e.ids.begin(), e.ids.end());
        types.insert(types.end(), e.types.begin(), e.types.end());
        cu.push_back(int32_t(ids.size()));
      }
      EncoderInputs x{B, T, ids.data(), types.data(), nullptr};
      x.cu_seqlens = cu.data();
      model.forward(be, x, Targets{}, false);
    } else {
      ids.assign(size_t(B) * T, pad);
      types.assign(size_t(B) * T, 0);
      for (int b = 0; b < B; ++b) {
        const Encoded& e = in[order[start + b]];
        std::copy(e.ids.begin(), e.ids.end(), ids.begin() + size_t(b) * T);
        std::copy(e.types.begin(), e.types.end(), types.begin() + size_t(b) * T);
      }
      model.forward(be, EncoderInputs{B, T, ids.data(), types.data(), mask.data()}, Targets{},
                    false);
    }
    use(Batch(model, B, T, mask.data(), &order[start], packed ? &cu : nullptr, padded));
  }
}

// Packed batches where the options ask for them and the backend runs them as one op.
Batching batching(Backend& be, int batch_size, int max_batch_tokens, bool packing) {
  if (batch_size < 1) fail("--batch-size {} must be at least 1", batch_size);
  if (max_batch_tokens < 1) fail("--max-batch-tokens {} must be at least 1", max_batch_tokens);
  return Batching{batch_size, packing && be.packed_attention() ? max_batch_tokens : 0};
}

void check_utf8(const std::string& text, size_t index, const char* what) {
  if (first_invalid_utf8(text) != std::string::npos)
    fail("{} {}: not valid UTF-8", what, index);
}

PoolingConfig pooling_named(const std::string& name) {
  PoolingConfig p;
  if (name == "cls") p.cls_token = true;
  else if (name == "mean") p.mean_tokens = true;
  else if (name == "max") p.max_tokens = true;
  else if (name == "mean_sqrt_len_tokens") p.mean_sqrt_len_tokens = true;
  else if (name == "weightedmean") p.weightedmean_tokens = true;
  else if (name == "lasttoken") p.lasttoken = true;
  else
    fail("--pooling '{}' is not one of cls, mean, max, mean_sqrt_len_tokens, weightedmean, "
         "lasttoken", name);
  return p;
}

// The text put before each input (EmbedOptions::prompt); throws for a prompt name the head lacks.
std::string prompt_text(const EmbeddingConfig& head, const EmbedOptions& options) {
  std::string prompt;
  if (options.prompt) {
    prompt = *options.prompt;
  } else {
    const std::string& name =
        options.prompt_name.empty() ? head.default_prompt_name : options.prompt_name;
    if (!name.empty()) {
      const std::string* p = head.prompt(name);
      if (!p) {
        std::string names;
        for (const auto& [n, text] : head.prompts) names += (names.empty() ? "" : ", ") + n;
        fail("--prompt-name '{}' is not one of the model's prompts ({})", name,
             names.empty() ? "it has none" : names);
      }
      prompt = *p;
    }
  }
  check_utf8(prompt, 0, "--prompt");
  return prompt;
}

}  // namespace

EmbeddingConfig embedding_head(const BertModel& model, const EmbedOptions& options) {
  if (!options.pooling.empty()) {
    EmbeddingConfig e;
    if (model.heads().embedding) e = *model.heads().embedding;
    e.pooling = pooling_named(options.pooling);
    e.dense.clear();  // their in_features follow the model's own pooling
    return e;
  }
  if (!model.heads().embedding)
    fail("{}has no sentence-embedding head: convert a sentence-transformers folder with "
         "bertrt-convert (it keeps the Pooling, Dense and Normalize modules), or give --pooling "
         "(mean, cls, ...) to pool this encoder's outputs",
         model.source().empty() ? "the model " : model.source() + " ");
  return *model.heads().embedding;
}

int embedding_dim(const BertModel& model, const EmbedOptions& options) {
  const int D = embedding_head(model, options).dim(model.config().hidden_size);
  if (options.dimensions < 0 || options.dimensions > D)
    fail("--dimensions {} is outside [1, {}] (the model's embedding width)", options.dimensions, D);
  return options.dimensions > 0 ? options.dimensions : D;
}

std::vector<float> embed_texts(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                               const std::vector<std::string>& texts, const EmbedOptions& options,
                               EmbedStats* stats) {
  const EmbeddingConfig head = embedding_head(model, options);
  const int H = model.config().hidden_size;
  const int D = head.dim(H), out_dim = embedding_dim(model, options);
  const Batching how =
      batching(be, options.batch_size, options.max_batch_tokens, options.packing);
  const std::string prompt = prompt_text(head, options);
  const int max_len = head.max_seq_length > 0 ? head.max_seq_length
                                                : model.config().max_position_embeddings;
  auto prepare = [&](const std::string& text) {
    return head.do_lower_case ? lower_text(text) : text;
  };
  // Transformer.tokenize of the prompt alone, less its [SEP]: the positions include_prompt=false
  // leaves out of the pooling.
  const int prompt_length =
      prompt.empty() ? 0 : 1 + int(tokenizer.tokenize(prepare(prompt)).size());

  EmbedStats st;
  st.texts = texts.size();
  st.max_seq_length = max_len;
  std::vector<Encoded> in(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    check_utf8(texts[i], i, "input");
    Encoding e = tokenizer.encode(prepare(prompt + texts[i]), std::nullopt);
    if (int(e.input_ids.size()) > max_len) {
      e.input_ids.resize(size_t(max_len));
      e.input_ids.back() = tokenizer.sep_id();
      e.token_type_ids.resize(size_t(max_len));
      ++st.truncated;
    }
    st.tokens += e.input_ids.size();
    in[i] = Encoded{std::move(e.input_ids), std::move(e.token_type_ids), prompt_length};
  }

  std::vector<float> out(texts.size() * size_t(out_dim));
  // The head as ops on `be`, then the truncation and normalization encode() applies: only the
  // embeddings come back to the host.
  EmbeddingHeadActs acts;
  DeviceArray<float> finished;
  std::vector<int32_t> prompt_len;
  std::vector<float> host;
  run_batches(model, be, in, how, [&](const Batch& batch) {
    const int B = batch.B, T = batch.T;
    const size_t* members = batch.members;
    prompt_len.assign(size_t(B), prompt_length);
    const float* x = embedding_head_forward(be, head, model.layout(), model.params(be),
                                            batch.hidden(be), batch.mask, prompt_len.data(), B,
                                            T, H, acts);
    const float* e = x;
    if (options.normalize || out_dim < D) {
      float* f = finished.ensure(be, size_t(B) * out_dim);
      if (options.normalize) be.l2_normalize_rows(f, x, D, B, out_dim);
      else be.copy_2d(f, out_dim, x, D, B, out_dim);
      e = f;
    }
    host.resize(size_t(B) * out_dim);
    be.download(host.data(), e, host.size() * sizeof(float));
    be.sync();
    for (int b = 0; b < B; ++b)
      std::copy(host.begin() + size_t(b) * out_dim, host.begin() + size_t(b + 1) * out_dim,
                out.begin() + members[b] * out_dim);
  });
  if (stats) *stats = st;
  return out;
}

int embed_max_length(const BertModel& model, const EmbedOptions& options) {
  const EmbeddingConfig head = embedding_head(model, options);
  return head.max_seq_length > 0 ? head.max_seq_length : model.config().max_position_embeddings;
}

std::vector<int> embed_token_lengths(const BertModel& model, const Tokenizer& tokenizer,
                                     const std::vector<std::string>& texts,
                                     const EmbedOptions& options) {
  const EmbeddingConfig head = embedding_head(model, options);
  const std::string prompt = prompt_text(head, options);
  std::vector<int> out(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    check_utf8(texts[i], i, "input");
    const std::string text = prompt + texts[i];
    out[i] = 2 + int(tokenizer.tokenize(head.do_lower_case ? lower_text(text) : text).size());
  }
  return out;
}

int tokenizer_max_length(const std::map<std::string, std::string>& metadata,
                         int max_position_embeddings) {
  const auto it = metadata.find("tokenizer.model_max_length");
  if (it == metadata.end()) return max_position_embeddings;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (*end != '\0' || v < 3) return max_position_embeddings;
  return int(std::min<long long>(v, max_position_embeddings));
}

std::vector<float> rerank_scores(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                 const std::string& query, const std::vector<std::string>& passages,
                                 const RerankOptions& options, EmbedStats* stats) {
  return rerank_pairs(model, tokenizer, be, std::vector<std::string>(passages.size(), query),
                      passages, options, stats);
}

std::vector<float> rerank_pairs(BertModel& model, const Tokenizer& tokenizer, Backend& be,
                                const std::vector<std::string>& queries,
                                const std::vector<std::string>& passages,
                                const RerankOptions& options, EmbedStats* stats) {
  if (queries.size() != passages.size())
    fail("rerank_pairs: {} queries for {} passages", queries.size(), passages.size());
  if (model.heads().resolved_kind() != HeadKind::kRegression)
    fail("{}has a {} head, not a cross-encoder's one-output classifier (a sentence-transformers "
         "CrossEncoder or a BertForSequenceClassification with num_labels 1)",
         model.source().empty() ? "the model " : model.source() + " ",
         head_kind_name(model.heads().resolved_kind()));
  const Batching how =
      batching(be, options.batch_size, options.max_batch_tokens, options.packing);
  const int max_len = options.max_length > 0 ? options.max_length
                                             : model.config().max_position_embeddings;
  if (max_len < 3 || max_len > model.config().max_position_embeddings)
    fail("--max-length {} is outside [3, {}]", max_len, model.config().max_position_embeddings);
  EmbedStats st;
  st.texts = passages.size();
  st.max_seq_length = max_len;
  std::vector<Encoded> in(passages.size());
  for (size_t i = 0; i < passages.size(); ++i) {
    check_utf8(queries[i], i, "query");
    check_utf8(passages[i], i, "passage");
    Encoding full = tokenizer.encode(queries[i], passages[i]);
    if (int(full.input_ids.size()) > max_len) {
      ++st.truncated;
      full = tokenizer.encode(queries[i], passages[i], max_len);
    }
    st.tokens += full.input_ids.size();
    in[i] = Encoded{std::move(full.input_ids), std::move(full.token_type_ids), 0};
  }
  std::vector<float> scores(passages.size());
  run_batches(model, be, in, how, [&](const Batch& batch) {
    const std::vector<float>& logits = model.logits();  // [B] (regression)
    for (int b = 0; b < batch.B; ++b) {
      const float z = logits[size_t(b)];
      scores[batch.members[b]] = options.raw_scores ? z : 1.0f / (1.0f + std::exp(-z));
    }
  });
  if (stats) *stats = st;
  return scores;
}

}  // namespace bertrt
