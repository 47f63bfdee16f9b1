// Inference on caller batches: the encoder's outputs, each fine-tuning head, fill-mask.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "bertrt/bertrt.h"
#include "capi/api_error.h"
#include "capi/batch.h"
#include "capi/handles.h"

using namespace bertrt;
using namespace bertrt::capi;

namespace {

void check_capacity(const char* fn, const char* arg, size_t capacity, size_t needed,
                    const std::string& shape) {
  if (capacity < needed)
    api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: {} is {} floats, the output {} needs {}", fn, arg,
             capacity, shape, needed);
}

void require_head(const bertrt_model& m, const char* fn, std::initializer_list<HeadKind> kinds,
                  const char* what) {
  const HeadKind k = m.loaded.model->heads().resolved_kind();
  if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
    api_fail(BERTRT_E_UNSUPPORTED, "{}: {}: the model has a {} head, not {}", fn, m.source,
             head_kind_name(k), what);
}

}  // namespace

extern "C" {

bertrt_status bertrt_encode(bertrt_model* model, const bertrt_batch* batch,
                            float* last_hidden_state, size_t last_hidden_capacity,
                            float* pooled_output, size_t pooled_capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_encode";
    bertrt_model& m = model_arg(model, fn);
    const EncoderInputs in = batch_inputs(m, batch, fn);
    const size_t H = size_t(m.loaded.model->config().hidden_size);
    const size_t hidden = size_t(in.B) * size_t(in.T) * H, pooled = size_t(in.B) * H;
    if (last_hidden_state)
      check_capacity(fn, "last_hidden_capacity", last_hidden_capacity, hidden,
                     fmt::format("[{}, {}, {}]", in.B, in.T, H));
    if (pooled_output)
      check_capacity(fn, "pooled_capacity", pooled_capacity, pooled,
                     fmt::format("[{}, {}]", in.B, H));
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    BertModel& bm = *m.loaded.model;
    bm.forward(*m.backend, in, Targets{}, false);
    if (last_hidden_state)
      std::memcpy(last_hidden_state, bm.last_hidden_state(), hidden * sizeof(float));
    if (pooled_output) std::memcpy(pooled_output, bm.pooler_output(), pooled * sizeof(float));
  });
}

bertrt_status bertrt_classify(bertrt_model* model, const bertrt_batch* batch, float* scores,
                              size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_classify";
    bertrt_model& m = model_arg(model, fn);
    require_head(m, fn, {HeadKind::kSequenceClassification, HeadKind::kRegression},
                 "sequence classification or regression");
    const EncoderInputs in = batch_inputs(m, batch, fn);
    require(scores, fn, "scores");
    const size_t K = size_t(m.loaded.model->heads().num_labels());
    const size_t n = size_t(in.B) * K;
    check_capacity(fn, "capacity", capacity, n, fmt::format("[{}, {}]", in.B, K));
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    BertModel& bm = *m.loaded.model;
    bm.forward(*m.backend, in, Targets{}, false);
    std::memcpy(scores, bm.logits().data(), n * sizeof(float));
  });
}

bertrt_status bertrt_tag_tokens(bertrt_model* model, const bertrt_batch* batch, float* logits,
                                size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_tag_tokens";
    bertrt_model& m = model_arg(model, fn);
    require_head(m, fn, {HeadKind::kTokenClassification}, "token classification");
    const EncoderInputs in = batch_inputs(m, batch, fn);
    require(logits, fn, "logits");
    const size_t K = size_t(m.loaded.model->heads().num_labels());
    const size_t n = size_t(in.B) * size_t(in.T) * K;
    check_capacity(fn, "capacity", capacity, n, fmt::format("[{}, {}, {}]", in.B, in.T, K));
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    BertModel& bm = *m.loaded.model;
    bm.forward(*m.backend, in, Targets{}, false);
    std::memcpy(logits, bm.logits().data(), n * sizeof(float));
  });
}

bertrt_status bertrt_spans(bertrt_model* model, const bertrt_batch* batch, float* start_logits,
                           float* end_logits, size_t capacity) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_spans";
    bertrt_model& m = model_arg(model, fn);
    require_head(m, fn, {HeadKind::kQuestionAnswering}, "question answering");
    const EncoderInputs in = batch_inputs(m, batch, fn);
    require(start_logits, fn, "start_logits");
    require(end_logits, fn, "end_logits");
    const size_t n = size_t(in.B) * size_t(in.T);
    check_capacity(fn, "capacity", capacity, n, fmt::format("[{}, {}]", in.B, in.T));
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    BertModel& bm = *m.loaded.model;
    bm.forward(*m.backend, in, Targets{}, false);
    std::memcpy(start_logits, bm.start_logits().data(), n * sizeof(float));
    std::memcpy(end_logits, bm.end_logits().data(), n * sizeof(float));
  });
}

bertrt_status bertrt_fill_mask(bertrt_model* model, const char* text, int32_t top_k,
                               bertrt_fill_candidate* out, size_t capacity, size_t* count) {
  return guard(BERTRT_E_FAILED, [&] {
    const char* fn = "bertrt_fill_mask";
    bertrt_model& m = model_arg(model, fn);
    require(text, fn, "text");
    require(count, fn, "count");
    *count = 0;
    require_utf8(text, fn, "text");
    BertModel& bm = *m.loaded.model;
    const Tokenizer& tok = *m.loaded.tokenizer;
    if (!bm.heads().mlm)
      api_fail(BERTRT_E_UNSUPPORTED, "{}: {}: the model has no MLM head (cls.predictions.*)", fn,
               m.source);
    if (top_k < 1) api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: top_k must be ≥ 1, got {}", fn, top_k);
    const int max_len = bm.config().max_position_embeddings;
    const Encoding e = tok.encode(text, std::nullopt);
    if (int(e.input_ids.size()) > max_len)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: text: {} pieces with [CLS]/[SEP], the model takes at most {} "
               "(max_position_embeddings)",
               fn, e.input_ids.size(), max_len);
    std::vector<int> masks;
    for (size_t i = 0; i < e.input_ids.size(); ++i)
      if (e.input_ids[i] == tok.mask_id()) masks.push_back(int(i));
    if (masks.empty())
      api_fail(BERTRT_E_INVALID_ARGUMENT, "{}: text: no {} token", fn, tok.options().mask_token);
    const int V = bm.config().vocab_size, k = std::min(int(top_k), V);
    *count = masks.size() * size_t(k);
    if (!out)  // a size query: *count is set
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: out is NULL: {} [MASK] × {} candidates need {} entries (*count says so)", fn,
               masks.size(), k, *count);
    if (capacity < *count)
      api_fail(BERTRT_E_INVALID_ARGUMENT,
               "{}: capacity {} is too small: {} [MASK] × {} candidates (*count says so)", fn,
               capacity, masks.size(), k);
    // The CLI's fill-mask (tools/cli/cmd_fill_mask.cpp): softmax in double, partial sort.
    std::lock_guard<std::mutex> lock(m.forward_mutex);
    const int T = int(e.input_ids.size());
    EncoderInputs in{1, T, e.input_ids.data(), e.token_type_ids.data(), e.attention_mask.data()};
    bm.forward(*m.backend, in, Targets{}, false);
    const float* logits = bm.mlm_logits_all(*m.backend);
    size_t w = 0;
    std::vector<int> idx(V);
    for (int pos : masks) {
      const float* z = logits + size_t(pos) * V;
      const float mx = *std::max_element(z, z + V);
      double sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(double(z[v]) - mx);
      std::iota(idx.begin(), idx.end(), 0);
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [z](int a, int b) { return z[a] > z[b]; });
      for (int i = 0; i < k; ++i)
        out[w++] =
            bertrt_fill_candidate{pos, idx[i], float(std::exp(double(z[idx[i]]) - mx) / sum)};
    }
  });
}

}  // extern "C"
